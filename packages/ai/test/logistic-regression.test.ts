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
});
