/** A seeded generator (mulberry32), so the synthetic history is the same on every run. */
export function seededRandom(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const normal = () => Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
  return {
    next,
    normal,
    chance: (p: number) => next() < p,
    between: (lo: number, hi: number) => lo + (hi - lo) * next(),
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T,
    /** Gamma(k, theta) for integer k: a sum of k exponentials. */
    gamma: (k: number, theta: number) => {
      let s = 0;
      for (let i = 0; i < k; i++) s -= Math.log(1 - next());
      return s * theta;
    },
  };
}
export type Random = ReturnType<typeof seededRandom>;
