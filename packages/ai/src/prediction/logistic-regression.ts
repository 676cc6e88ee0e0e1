import { CholeskyDecomposition, Matrix } from 'ml-matrix';

/**
 * L2-regularized logistic regression fitted by Newton's method (iteratively reweighted least squares),
 * on standardized features. A handful of iterations converge on thousands of rows in milliseconds, and
 * the penalty keeps a small organization's history from producing overconfident numbers.
 */
export interface LogisticModel {
  intercept: number;
  /** One per feature, on the standardized scale. */
  coefficients: number[];
  means: number[];
  scales: number[];
  /** Rows and positive labels it was fitted on. */
  rows: number;
  positives: number;
}

/** Features are on readable scales (fractions, log days): spreads below this are treated as this. */
const MIN_SCALE = 0.1;

export interface FitOptions {
  /** Ridge penalty on the standardized coefficients (not on the intercept). */
  l2?: number;
  maxIterations?: number;
  /** Optional weight per row (defaults to 1). */
  weights?: number[];
}

export function fitLogistic(x: number[][], y: number[], options: FitOptions = {}): LogisticModel {
  const n = x.length;
  const d = x[0]?.length ?? 0;
  if (n === 0) throw new Error('cannot fit on no rows');
  const l2 = options.l2 ?? 1;
  const w = options.weights ?? new Array<number>(n).fill(1);
  const totalWeight = w.reduce((a, b) => a + b, 0);
  const means = new Array<number>(d).fill(0);
  const scales = new Array<number>(d).fill(1);
  for (let j = 0; j < d; j++) {
    let m = 0;
    for (let i = 0; i < n; i++) m += (w[i] as number) * (x[i]?.[j] as number);
    m /= totalWeight;
    let v = 0;
    for (let i = 0; i < n; i++) v += (w[i] as number) * ((x[i]?.[j] as number) - m) ** 2;
    means[j] = m;
    // A constant feature keeps scale 1 (its standardized value is 0 and the penalty holds it at 0); a nearly
    // constant one is not blown up: a difference the history never showed must not dominate a prediction.
    const sd = Math.sqrt(v / totalWeight);
    scales[j] = sd === 0 ? 1 : Math.max(sd, MIN_SCALE);
  }
  // Design matrix with a leading column of ones for the intercept.
  const design = new Matrix(n, d + 1);
  for (let i = 0; i < n; i++) {
    design.set(i, 0, 1);
    for (let j = 0; j < d; j++)
      design.set(i, j + 1, ((x[i]?.[j] as number) - (means[j] as number)) / (scales[j] as number));
  }
  const positives = y.reduce((a, b) => a + b, 0);
  const beta = new Array<number>(d + 1).fill(0);
  const base = Math.min(0.99, Math.max(0.01, positives / n));
  beta[0] = Math.log(base / (1 - base));

  for (let iter = 0; iter < (options.maxIterations ?? 25); iter++) {
    const gradient = new Array<number>(d + 1).fill(0);
    const hessian = Matrix.zeros(d + 1, d + 1);
    for (let i = 0; i < n; i++) {
      let z = 0;
      for (let j = 0; j <= d; j++) z += (beta[j] as number) * design.get(i, j);
      const p = 1 / (1 + Math.exp(-z));
      const wi = w[i] as number;
      const r = wi * ((y[i] as number) - p);
      const h = wi * p * (1 - p);
      for (let j = 0; j <= d; j++) {
        const xij = design.get(i, j);
        gradient[j] = (gradient[j] as number) + r * xij;
        if (xij === 0) continue;
        for (let k = j; k <= d; k++) hessian.set(j, k, hessian.get(j, k) + h * xij * design.get(i, k));
      }
    }
    for (let j = 0; j <= d; j++) {
      for (let k = 0; k < j; k++) hessian.set(j, k, hessian.get(k, j));
      if (j > 0) {
        gradient[j] = (gradient[j] as number) - l2 * (beta[j] as number);
        hessian.set(j, j, hessian.get(j, j) + l2);
      }
    }
    hessian.set(0, 0, hessian.get(0, 0) + 1e-9);
    const step = new CholeskyDecomposition(hessian).solve(Matrix.columnVector(gradient)).to1DArray();
    let change = 0;
    for (let j = 0; j <= d; j++) {
      beta[j] = (beta[j] as number) + (step[j] as number);
      change = Math.max(change, Math.abs(step[j] as number));
    }
    if (change < 1e-6) break;
  }
  return {
    intercept: beta[0] as number,
    coefficients: beta.slice(1),
    means,
    scales,
    rows: n,
    positives,
  };
}

/** Each feature's share of the log-odds, relative to an average deal of the fitted history. */
export function contributions(model: LogisticModel, x: number[]): number[] {
  return model.coefficients.map(
    (c, j) => (c * ((x[j] as number) - (model.means[j] as number))) / (model.scales[j] as number),
  );
}

export function predictLogistic(model: LogisticModel, x: number[]): number {
  const z = model.intercept + contributions(model, x).reduce((a, b) => a + b, 0);
  return 1 / (1 + Math.exp(-z));
}
