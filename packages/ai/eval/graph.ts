import { closedAt, DAY_MS, type DealHistory, type LoggedActivityFacts } from '../src/history.ts';
import { seededRandom } from './random.ts';
import type { SyntheticDeal } from './scenario.ts';

/**
 * The relationship graph and custom fields added to generated deals, for the eval's comparison of the model
 * with and without the features read from them (docs/ai.md: Quality).
 *
 * `helpful`: the way real pipelines are said to behave, stated here as the process. A deal that will be
 * won keeps its calls and meetings going until its close, each of its people taking part in one with
 * chance 0.5 (0.3 when it will be lost); one that will be lost has its calls stop after the first 30-60% of
 * its open life and leaves a task open past its due date in 60% of cases (20% when won). A custom select
 * `segment` (enterprise / mid-market / smb) is enterprise for 45% of won and 20% of lost deals; a custom
 * number `budget` is log-normal (σ 0.8), e^0.7 ≈ 2x higher for won deals. Drawn from the outcome, on top of what the
 * deal already shows (so the "true probability" of these deals is no longer the generator's).
 *
 * `noise`: the same shapes drawn without looking at the outcome: a model should gain nothing from them.
 */
export function withGraph(deals: SyntheticDeal[], seed: number, mode: 'helpful' | 'noise'): SyntheticDeal[] {
  const r = seededRandom(seed);
  return deals.map((d, i) => {
    const h = d.history;
    const stage = h.stages.find((s) => s.name === h.stageName);
    const closed = stage && stage.type !== 'open';
    const won = mode === 'helpful' ? d.won : r.chance(0.5);
    const start = h.deal.createdAt.getTime();
    const end = closed ? closedAt(h).getTime() : start + 120 * DAY_MS;
    const life = Math.max(DAY_MS, end - start);
    const quietFrom = won ? end : start + life * r.between(0.3, 0.6);
    const people = h.contacts.map((c) => c.id);
    const logged: LoggedActivityFacts[] = [];
    let t = start + r.between(1, 6) * DAY_MS;
    let n = 0;
    while (t < quietFrom && t < end) {
      const takingPart = people.filter(() => r.chance(won ? 0.5 : 0.3));
      logged.push({
        id: `g${i}-${n++}`,
        type: r.chance(0.5) ? 'call' : 'meeting',
        subject: 'Check-in',
        body: null,
        at: new Date(t),
        dueAt: null,
        status: null,
        completedAt: null,
        participants: takingPart,
      });
      t += r.between(5, 12) * DAY_MS;
    }
    const taskAt = start + life * r.between(0.1, 0.5);
    const due = taskAt + 7 * DAY_MS;
    const leftOpen = r.chance(won ? 0.2 : 0.6);
    if (due < end)
      logged.push({
        id: `g${i}-task`,
        type: 'task',
        subject: 'Send the proposal',
        body: null,
        at: new Date(taskAt),
        dueAt: new Date(due),
        status: leftOpen ? 'open' : 'done',
        completedAt: leftOpen ? null : new Date(due - DAY_MS),
        participants: [],
      });
    const segment = r.chance(won ? 0.45 : 0.2) ? 'enterprise' : r.chance(0.5) ? 'mid-market' : 'smb';
    const budget = Math.round(20_000 * Math.exp(0.8 * r.normal() + (won ? 0.7 : 0)));
    const history: DealHistory = {
      ...h,
      deal: { ...h.deal, custom: { segment, budget } },
      logged,
      customFields: [
        { key: 'segment', label: 'Segment', type: 'select', aiHint: null },
        { key: 'budget', label: 'Budget', type: 'currency', aiHint: null },
      ],
    };
    return { ...d, history };
  });
}
