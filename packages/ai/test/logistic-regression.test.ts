import { describe, expect, it } from 'vitest';
import { seededRandom } from '../eval/random.ts';
import { fitLogistic, predictLogistic } from '../src/prediction/logistic-regression.ts';

describe('ridge logistic regression', () => {
  it('recovers the direction and size of known effects and stays calibrated', () => {
    const r = seededRandom(3);
    const x: number[][] = [];
    const y: number[] = [];
    for (let i = 0; i < 4000; i++) {
      const a = r.normal();
      const b = r.normal();
      const noise = r.normal();
      x.push([a, b, noise]);
      y.push(r.chance(1 / (1 + Math.exp(-(0.5 + 1.5 * a - 1 * b)))) ? 1 : 0);
    }
    const model = fitLogistic(x, y, { l2: 1 });
    const raw = model.coefficients.map((c, j) => c / (model.scales[j] as number));
    expect(raw[0]).toBeCloseTo(1.5, 0);
    expect(raw[1]).toBeCloseTo(-1, 0);
    expect(Math.abs(raw[2] as number)).toBeLessThan(0.15);
    const mean = x.reduce((s, row) => s + predictLogistic(model, row), 0) / x.length;
    expect(mean).toBeCloseTo(y.reduce((a, b) => a + b, 0) / y.length, 2);
  });

  it('does not blow up a feature the history barely varied', () => {
    const x = Array.from({ length: 40 }, (_, i) => [i % 2, 1e-6 * (i % 3)]);
    const y = x.map((row) => row[0] as number);
    const model = fitLogistic(x, y, { l2: 2 });
    const p = predictLogistic(model, [0, 5]);
    expect(p).toBeLessThan(0.5);
  });

  it('respects sign constraints: a coefficient the data would push the wrong way is held at 0, the rest refit', () => {
    const r = seededRandom(5);
    const x: number[][] = [];
    const y: number[] = [];
    for (let i = 0; i < 3000; i++) {
      const a = r.normal();
      const b = r.normal();
      const c = 0.6 * a + 0.8 * r.normal();
      x.push([a, b, c]);
      y.push(r.chance(1 / (1 + Math.exp(-(1.2 * a - 0.8 * b + 0.5 * c)))) ? 1 : 0);
    }
    // b lowers the odds; required to raise them, it must end at exactly 0 and the fit must equal the fit without b.
    const constrained = fitLogistic(x, y, { l2: 1, signs: [1, 1, 1], scales: [1, 1, 1] });
    expect(constrained.coefficients[1]).toBe(0);
    const without = fitLogistic(
      x.map(([a, , c]) => [a as number, c as number]),
      y,
      { l2: 1, scales: [1, 1] },
    );
    expect(constrained.coefficients[0]).toBeCloseTo(without.coefficients[0] as number, 4);
    expect(constrained.coefficients[2]).toBeCloseTo(without.coefficients[1] as number, 4);
    expect(constrained.intercept).toBeCloseTo(without.intercept, 4);
    // A constraint the data agrees with changes nothing.
    const free = fitLogistic(x, y, { l2: 1, scales: [1, 1, 1] });
    const agreeing = fitLogistic(x, y, { l2: 1, signs: [1, -1, 1], scales: [1, 1, 1] });
    agreeing.coefficients.forEach((c, j) => {
      expect(c).toBeCloseTo(free.coefficients[j] as number, 6);
    });
  });

  it('keeps a fixed coefficient at 0 and scales a feature by its given unit', () => {
    const r = seededRandom(8);
    const x = Array.from({ length: 500 }, () => [r.normal(), r.chance(0.5) ? 1 : 0]);
    const y = x.map((row) => (r.chance(1 / (1 + Math.exp(-2 * (row[1] as number) + 1))) ? 1 : 0));
    const model = fitLogistic(x, y, { l2: 1, scales: [1, 0.5], fixed: [true, false] });
    expect(model.coefficients[0]).toBe(0);
    expect(model.scales).toEqual([1, 0.5]);
    expect((model.coefficients[1] as number) / 0.5).toBeGreaterThan(1.2);
  });
});
