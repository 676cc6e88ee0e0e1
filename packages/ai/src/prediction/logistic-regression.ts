import { CholeskyDecomposition, Matrix } from 'ml-matrix';

/**
 * L2-regularized logistic regression fitted by Newton's method (iteratively reweighted least squares),
 * on centred and scaled features. A handful of iterations converge on thousands of rows in milliseconds,
 * and the penalty keeps a small organization's history from producing overconfident numbers.
 *
 * Two options serve the win model:
 * - `scales`: a fixed unit per feature instead of the history's spread. The penalty then acts on the effect
 *   of one unit (a yes/no feature's 0.5, one e-fold of value), so a feature the history seldom shows gets a
 *   small coefficient: two deals with a rare lead source cannot move every later deal with it far.
 * - `signs`: +1 (may only raise the odds), -1 (may only lower them) or 0 (either way). A risk such as a
 *   recorded competitor can then never turn into a reason for a higher number, whatever a small history
 *   happens to show; the constrained fit is solved with an active set (a coefficient held at 0 is freed
 *   again when its gradient points the allowed way).
 */
export interface LogisticModel {
  intercept: number;
  /** One per feature, on the scaled feature (x - mean) / scale. */
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
  /** Ridge penalty on the scaled coefficients (not on the intercept). */
  l2?: number;
  maxIterations?: number;
  /** Optional weight per row (defaults to 1). */
  weights?: number[];
  /** Fixed scale per feature; by default each feature's standard deviation in the rows (at least MIN_SCALE). */
  scales?: number[];
  /** Allowed sign per coefficient: 1, -1 or 0 (free, the default). */
  signs?: number[];
  /** Coefficients held at 0 whatever the data (features the caller judged unsupported). */
  fixed?: boolean[];
}

export function fitLogistic(x: number[][], y: number[], options: FitOptions = {}): LogisticModel {
  const n = x.length;
  const d = x[0]?.length ?? 0;
  if (n === 0) throw new Error('cannot fit on no rows');
  const l2 = options.l2 ?? 1;
  const w = options.weights ?? new Array<number>(n).fill(1);
  const signs = options.signs ?? new Array<number>(d).fill(0);
  const totalWeight = w.reduce((a, b) => a + b, 0);
  const means = new Array<number>(d).fill(0);
  const scales = new Array<number>(d).fill(1);
  for (let j = 0; j < d; j++) {
    let m = 0;
    for (let i = 0; i < n; i++) m += (w[i] as number) * (x[i]?.[j] as number);
    m /= totalWeight;
    means[j] = m;
    const fixed = options.scales?.[j];
    if (fixed !== undefined) {
      scales[j] = fixed;
      continue;
    }
    let v = 0;
    for (let i = 0; i < n; i++) v += (w[i] as number) * ((x[i]?.[j] as number) - m) ** 2;
    // A constant feature keeps scale 1 (its scaled value is 0 and the penalty holds it at 0); a nearly
    // constant one is not blown up: a difference the history never showed must not dominate a prediction.
    const sd = Math.sqrt(v / totalWeight);
    scales[j] = sd === 0 ? 1 : Math.max(sd, MIN_SCALE);
  }
  // Design rows with a leading 1 for the intercept, as flat typed arrays (the inner loops run n·d² times).
  const p1 = d + 1;
  const design = new Float64Array(n * p1);
  for (let i = 0; i < n; i++) {
    design[i * p1] = 1;
    for (let j = 0; j < d; j++)
      design[i * p1 + j + 1] = ((x[i]?.[j] as number) - (means[j] as number)) / (scales[j] as number);
  }
  const positives = y.reduce((a, b) => a + b, 0);
  const beta = new Float64Array(p1);
  const base = Math.min(0.99, Math.max(0.01, positives / n));
  beta[0] = Math.log(base / (1 - base));
  // Coefficients held at 0 by their sign constraint (index 1..d; the intercept is always free).
  const held = new Uint8Array(p1);
  const frozen = new Uint8Array(p1);
  options.fixed?.forEach((f, j) => {
    if (f) frozen[j + 1] = held[j + 1] = 1;
  });

  const gradient = new Float64Array(p1);
  const hessian = new Float64Array(p1 * p1);
  const evaluate = () => {
    gradient.fill(0);
    hessian.fill(0);
    for (let i = 0; i < n; i++) {
      const row = i * p1;
      let z = 0;
      for (let j = 0; j < p1; j++) z += (beta[j] as number) * (design[row + j] as number);
      const p = 1 / (1 + Math.exp(-z));
      const wi = w[i] as number;
      const r = wi * ((y[i] as number) - p);
      const h = wi * p * (1 - p);
      for (let j = 0; j < p1; j++) {
        const xij = design[row + j] as number;
        if (xij === 0) continue;
        gradient[j] = (gradient[j] as number) + r * xij;
        const hx = h * xij;
        const hr = j * p1;
        for (let k = j; k < p1; k++)
          hessian[hr + k] = (hessian[hr + k] as number) + hx * (design[row + k] as number);
      }
    }
    for (let j = 1; j < p1; j++) gradient[j] = (gradient[j] as number) - l2 * (beta[j] as number);
  };

  /** The Newton step with held coefficients kept where they are. */
  const solveStep = (hold: Uint8Array): number[] => {
    const H = new Matrix(p1, p1);
    for (let j = 0; j < p1; j++) {
      for (let k = j; k < p1; k++) {
        const v = hold[j] || hold[k] ? 0 : (hessian[j * p1 + k] as number);
        H.set(j, k, v);
        H.set(k, j, v);
      }
      if (hold[j]) H.set(j, j, 1);
      else if (j > 0) H.set(j, j, H.get(j, j) + l2);
    }
    H.set(0, 0, H.get(0, 0) + 1e-9);
    const g = Array.from(gradient, (v, j) => (hold[j] ? 0 : v));
    return new CholeskyDecomposition(H).solve(Matrix.columnVector(g)).to1DArray();
  };

  const maxIterations = options.maxIterations ?? 50;
  for (let iter = 0; iter < maxIterations; iter++) {
    evaluate();
    // Free a held coefficient whose gradient points the allowed way (the KKT condition fails there).
    for (let j = 1; j < p1; j++)
      if (held[j] && !frozen[j] && (signs[j - 1] as number) * (gradient[j] as number) > 1e-9) held[j] = 0;
    let step = solveStep(held);
    // A coefficient at its boundary whose step points the forbidden way stays held (and the step is redone).
    for (;;) {
      let again = false;
      for (let j = 1; j < p1; j++) {
        const s = signs[j - 1] as number;
        if (s !== 0 && !held[j] && beta[j] === 0 && s * (step[j] as number) < 0) {
          held[j] = 1;
          again = true;
        }
      }
      if (!again) break;
      step = solveStep(held);
    }
    // Stop at the first sign boundary the step would cross, and hold that coefficient at 0 from there.
    let alpha = 1;
    let blocking = -1;
    for (let j = 1; j < p1; j++) {
      const s = signs[j - 1] as number;
      const next = (beta[j] as number) + (step[j] as number);
      if (s !== 0 && !held[j] && s * next < 0) {
        const a = (beta[j] as number) / -(step[j] as number);
        if (a < alpha) {
          alpha = Math.max(0, a);
          blocking = j;
        }
      }
    }
    let change = 0;
    for (let j = 0; j < p1; j++) {
      const delta = alpha * (step[j] as number);
      beta[j] = (beta[j] as number) + delta;
      change = Math.max(change, Math.abs(delta));
    }
    if (blocking > 0) {
      beta[blocking] = 0;
      held[blocking] = 1;
      continue;
    }
    if (change < 1e-7) break;
  }
  return {
    intercept: beta[0] as number,
    coefficients: Array.from(beta.slice(1)),
    means,
    scales,
    rows: n,
    positives,
  };
}

/** Each feature's share of the log-odds, relative to an average deal of the fitted history. */
export function contributions(model: LogisticModel, x: number[]): number[] {
  return model.coefficients.map((c, j) =>
    c === 0 ? 0 : (c * ((x[j] as number) - (model.means[j] as number))) / (model.scales[j] as number),
  );
}

export function predictLogistic(model: LogisticModel, x: number[]): number {
  const z = model.intercept + contributions(model, x).reduce((a, b) => a + b, 0);
  return 1 / (1 + Math.exp(-z));
}
