/**
 * `npm run eval:ai [dataset-dir]`: the quality of win_probability, measured through the same code the
 * service runs (snapshots, features, the fitted model and predictSnapshot), on held-out data.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { closedAt, type DealHistory, snapshotAt } from '../src/history.ts';
import { fitWinModel, labelledSnapshotTimes, predictSnapshot, trainingSet } from '../src/prediction/model.ts';
import { type Scores, scoresOf } from './metrics.ts';
import { opportunityHistory } from './opportunities.ts';
import { syntheticHistory } from './synthetic.ts';

const STALE_AFTER_DAYS = 14;
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

interface Report {
  name: string;
  trainDeals: number;
  testDeals: number;
  testRows: number;
  baseRate: number;
  model: Scores;
  stage: Scores;
  constant: Scores;
}

/**
 * Temporal split: fit on deals closed before `cutoff` (snapshots taken as the service takes them), then
 * score every snapshot from `cutoff` to `end` of the deals that closed after the cutoff.
 */
function evaluate(name: string, histories: DealHistory[], cutoff: Date, end: Date): Report {
  const train = histories.filter((h) => closedAt(h) < cutoff);
  const winModel = fitWinModel(train, cutoff);
  if (!winModel) throw new Error(`${name}: too little history before ${cutoff.toISOString()}`);
  const trainRows = trainingSet(train, cutoff);
  const baseRate = trainRows.y.reduce((a, b) => a + b, 0) / trainRows.y.length;

  const p: number[] = [];
  const stage: number[] = [];
  const y: number[] = [];
  let testDeals = 0;
  for (const h of histories) {
    if (closedAt(h) < cutoff) continue;
    const labelled = labelledSnapshotTimes(h, end);
    if (!labelled) continue;
    const times = labelled.times.filter((t) => t >= cutoff);
    if (times.length === 0) continue;
    testDeals++;
    for (const t of times) {
      const snapshot = snapshotAt(h, t);
      p.push(predictSnapshot(snapshot, { staleAfterDays: STALE_AFTER_DAYS, winModel }).win_probability / 100);
      stage.push((snapshot.stage.probability ?? 50) / 100);
      y.push(labelled.label);
    }
  }
  return {
    name,
    trainDeals: winModel.closedDeals,
    testDeals,
    testRows: y.length,
    baseRate,
    model: scoresOf(p, y),
    stage: scoresOf(stage, y),
    constant: scoresOf(
      y.map(() => baseRate),
      y,
    ),
  };
}

const f = (v: number) => (Number.isNaN(v) ? 'n/a' : v.toFixed(4));
function print(r: Report, targets: string) {
  process.stdout.write(
    `\n## ${r.name}\n\nTrained on ${r.trainDeals} closed deals; tested on ${r.testRows} snapshots of ${r.testDeals} later deals ` +
      `(train base rate ${(r.baseRate * 100).toFixed(1)}%).\n\n` +
      '| win_probability from | AUC | Brier | ECE |\n|---|---|---|---|\n' +
      `| fitted model (this service) | ${f(r.model.auc)} | ${f(r.model.brier)} | ${f(r.model.ece)} |\n` +
      `| stage probability alone | ${f(r.stage.auc)} | ${f(r.stage.brier)} | ${f(r.stage.ece)} |\n` +
      `| constant base rate | ${f(r.constant.auc)} | ${f(r.constant.brier)} | ${f(r.constant.ece)} |\n\n` +
      `Targets: ${targets}\n`,
  );
}

const checks: Array<[string, boolean]> = [];
const now = new Date('2026-11-01T00:00:00Z');
const synthetic = evaluate(
  'Synthetic organization (2,500 deals, stated generating process, seed 7)',
  syntheticHistory({ deals: 2_500, now, seed: 7 }),
  new Date(now.getTime() - 150 * 86_400_000),
  now,
);
print(synthetic, 'AUC >= 0.75, ECE <= 0.05, AUC and Brier better than both baselines.');
checks.push(
  ['synthetic AUC >= 0.75', synthetic.model.auc >= 0.75],
  ['synthetic ECE <= 0.05', synthetic.model.ece <= 0.05],
  ['synthetic AUC above both baselines', synthetic.model.auc > Math.max(synthetic.stage.auc, 0.5)],
  [
    'synthetic Brier below both baselines',
    synthetic.model.brier < Math.min(synthetic.stage.brier, synthetic.constant.brier),
  ],
);

const datasetDir = path.resolve(ROOT, process.argv[2] ?? '../shared/data/crm-sales-opportunities');
let real: Report | undefined;
try {
  real = evaluate(
    `Real opportunities (${path.relative(ROOT, datasetDir)}), temporal split at 2017-07-01`,
    opportunityHistory(datasetDir),
    new Date('2017-07-01T00:00:00Z'),
    new Date('2018-01-01T00:00:00Z'),
  );
} catch (err) {
  process.stdout.write(
    `\nReal opportunities: skipped, ${(err as Error).message} (give the dataset folder: npm run eval:ai -- <dir>)\n`,
  );
}
if (real) {
  print(real, 'Brier no worse than the base rate, ECE <= 0.05 (the data carries little signal).');
  checks.push(
    ['real Brier <= base rate', real.model.brier <= real.constant.brier + 1e-9],
    ['real ECE <= 0.05', real.model.ece <= 0.05],
  );
}
process.stdout.write(`\n${checks.map(([name, ok]) => `${ok ? 'PASS' : 'FAIL'} ${name}`).join('\n')}\n`);
process.exitCode = checks.every(([, ok]) => ok) ? 0 : 1;
