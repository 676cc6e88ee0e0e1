import { closedAt, DAY_MS, type DealHistory, type FieldValueFacts } from '../src/history.ts';
import { seededRandom } from './random.ts';
import type { SyntheticDeal } from './scenario.ts';

/**
 * A field history added to generated deals (the Maven data set has none), for the eval's comparison of the
 * model with and without the history features (docs/ai.md: Quality).
 *
 * The stage's values are the deal's own stage moves (its activity log), so days in the current stage carry
 * whatever the generator's timeline carries. The close date starts 30-90 days after the creation and, every
 * 20 days of the deal's open life, is pushed 15-45 days with chance 0.35 for a deal that will be lost and
 * 0.08 for one that will be won (`helpful`: the way slipping deals are said to behave, stated here as the
 * process), or with chance 0.2 whatever the outcome (`noise`: a model should gain nothing from the pushes).
 * The pushes are in the field history only: the deal's `expected_close_date` field is the generator's.
 */
export function withFieldHistory(
  deals: SyntheticDeal[],
  seed: number,
  mode: 'helpful' | 'noise',
): SyntheticDeal[] {
  const r = seededRandom(seed);
  return deals.map((d, i) => {
    const h = d.history;
    const stage = h.stages.find((s) => s.name === h.stageName);
    const closed = stage && stage.type !== 'open';
    const start = h.deal.createdAt.getTime();
    const end = closed ? closedAt(h).getTime() : start + 120 * DAY_MS;
    const values: FieldValueFacts[] = [];
    const moves = h.activities.filter((a) => a.type === 'stage_changed').sort((a, b) => +a.at - +b.at);
    const first = moves[0]?.changes?.stage?.from ?? h.stageName;
    values.push({ field: 'stage_id', value: String(first), at: h.deal.createdAt, eventId: `e${i}-0` });
    let close = start + r.between(30, 90) * DAY_MS;
    values.push({
      field: 'expected_close_date',
      value: new Date(close).toISOString(),
      at: h.deal.createdAt,
      eventId: `e${i}-0`,
    });
    moves.forEach((a, n) => {
      values.push({
        field: 'stage_id',
        value: String(a.changes?.stage?.to),
        at: a.at,
        eventId: `e${i}-s${n}`,
      });
    });
    const chance = mode === 'helpful' ? (d.won ? 0.08 : 0.35) : 0.2;
    let n = 0;
    for (let t = start + 20 * DAY_MS; t < end - DAY_MS; t += 20 * DAY_MS) {
      if (!r.chance(chance)) continue;
      close += r.between(15, 45) * DAY_MS;
      values.push({
        field: 'expected_close_date',
        value: new Date(close).toISOString(),
        at: new Date(t),
        eventId: `e${i}-c${n++}`,
      });
    }
    values.sort((x, y) => +x.at - +y.at);
    const history: DealHistory = { ...h, fieldHistory: values };
    return { ...d, history };
  });
}
