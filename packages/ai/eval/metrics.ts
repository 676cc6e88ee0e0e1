/** Quality of probabilities against outcomes (0/1). */

/** Area under the ROC curve: the chance a random won row scores above a random lost one (ties half). */
export function auc(p: number[], y: number[]): number {
  const rows = p.map((v, i) => ({ v, y: y[i] as number })).sort((a, b) => a.v - b.v);
  let rankSum = 0;
  let positives = 0;
  for (let i = 0; i < rows.length; ) {
    let j = i;
    while (j < rows.length && rows[j]?.v === rows[i]?.v) j++;
    const averageRank = (i + j + 1) / 2; // ranks are 1-based
    for (let k = i; k < j; k++)
      if (rows[k]?.y === 1) {
        rankSum += averageRank;
        positives++;
      }
    i = j;
  }
  const negatives = rows.length - positives;
  if (positives === 0 || negatives === 0) return Number.NaN;
  return (rankSum - (positives * (positives + 1)) / 2) / (positives * negatives);
}

/** Mean squared difference between probability and outcome. */
export const brier = (p: number[], y: number[]) =>
  p.reduce((s, v, i) => s + (v - (y[i] as number)) ** 2, 0) / p.length;

/** Expected calibration error over ten equal-width bins, weighted by how many rows fall in each. */
export function ece(p: number[], y: number[], bins = 10): number {
  const sum = new Array<number>(bins).fill(0);
  const hits = new Array<number>(bins).fill(0);
  const count = new Array<number>(bins).fill(0);
  p.forEach((v, i) => {
    const b = Math.min(bins - 1, Math.floor(v * bins));
    sum[b] = (sum[b] as number) + v;
    hits[b] = (hits[b] as number) + (y[i] as number);
    count[b] = (count[b] as number) + 1;
  });
  let total = 0;
  for (let b = 0; b < bins; b++)
    if ((count[b] as number) > 0) total += Math.abs((sum[b] as number) - (hits[b] as number));
  return total / p.length;
}

export interface Scores {
  auc: number;
  brier: number;
  ece: number;
}
export const scoresOf = (p: number[], y: number[]): Scores => ({
  auc: auc(p, y),
  brier: brier(p, y),
  ece: ece(p, y),
});

export interface ReliabilityBin {
  from: number;
  to: number;
  count: number;
  meanPredicted: number;
  observed: number;
}

/** The reliability table behind the ECE: ten equal-width bins of the predicted probability. */
export function reliability(p: number[], y: number[], bins = 10): ReliabilityBin[] {
  const out = Array.from({ length: bins }, (_, b) => ({
    from: b / bins,
    to: (b + 1) / bins,
    count: 0,
    meanPredicted: 0,
    observed: 0,
  }));
  p.forEach((v, i) => {
    const bin = out[Math.min(bins - 1, Math.floor(v * bins))] as ReliabilityBin;
    bin.count++;
    bin.meanPredicted += v;
    bin.observed += y[i] as number;
  });
  for (const bin of out)
    if (bin.count > 0) {
      bin.meanPredicted /= bin.count;
      bin.observed /= bin.count;
    }
  return out;
}
