import { describe, expect, it } from 'vitest';
import { withFieldHistory } from '../eval/field-history.ts';
import { withGraph } from '../eval/graph.ts';
import type { SyntheticDeal } from '../eval/scenario.ts';
import { applyChange } from '../eval/scenario.ts';
import { syntheticDeals } from '../eval/synthetic.ts';
import { generatorB } from '../eval/synthetic-b.ts';
import { type DealHistory, snapshotAt } from '../src/history.ts';
import { featureSpecs, MIN_LEAD_SOURCE_DEALS } from '../src/prediction/features.ts';
import { fitWinModel, MIN_CLOSED_DEALS, predictSnapshot, trainingSet } from '../src/prediction/model.ts';

const now = new Date('2026-11-01T00:00:00Z');
const organization = (seed: number) => generatorB({ deals: 600, now, seed, mode: 'api', closed: 400 });
const history = (deals: SyntheticDeal[]) => deals.slice(0, 400).map((d) => d.history);
const open = (deals: SyntheticDeal[]) => deals.slice(400).map((d) => d.history);
const COMPETITION = /competitor|evaluating|incumbent|shortlist/i;
const withoutCompetition = (h: DealHistory): DealHistory => ({
  ...h,
  deal: {
    ...h.deal,
    notes: (h.deal.notes ?? '')
      .split(/(?<=\.)\s+/)
      .filter((t) => !COMPETITION.test(t))
      .join(' '),
  },
});
const probability = (h: DealHistory, model: ReturnType<typeof fitWinModel>) =>
  predictSnapshot(snapshotAt(h, now), { staleAfterDays: 14, winModel: model }).win_probability;
const coefficient = (model: NonNullable<ReturnType<typeof fitWinModel>>, key: string) =>
  model.model.coefficients[model.features.indexOf(key)] as number;

describe('the fitted model learns the raw signals the history carries', () => {
  const deals = organization(41);
  const model = fitWinModel(history(deals), now);

  it('reads value against the typical deal, lead sources, competitors and blockers, each its own way', () => {
    expect(model).not.toBeNull();
    if (!model) return;
    expect(model.context.typicalValue).toBeGreaterThan(15_000);
    expect(model.context.typicalValue).toBeLessThan(35_000);
    expect(model.context.leadSources).toEqual(
      expect.arrayContaining(['Referral', 'Partner', 'Inbound', 'Outbound']),
    );
    expect(coefficient(model, 'value_ratio')).toBeLessThan(0);
    expect(coefficient(model, 'competitor')).toBeLessThan(0);
    expect(coefficient(model, 'blockers') + coefficient(model, 'negative_stakeholders')).toBeLessThan(0);
    expect(coefficient(model, 'lead_source:Referral')).toBeGreaterThan(
      coefficient(model, 'lead_source:Outbound'),
    );
  });

  it('respects every feature’s sign: support never lowers the odds, a risk never raises them', () => {
    if (!model) return;
    const specs = featureSpecs(model.context);
    specs.forEach((f, j) => {
      const c = model.model.coefficients[j] as number;
      if (f.sign > 0) expect(c, f.key).toBeGreaterThanOrEqual(0);
      if (f.sign < 0) expect(c, f.key).toBeLessThanOrEqual(0);
    });
  });

  it('moves the answer the way the data does when one driver changes', () => {
    let value = 0;
    let competitor = 0;
    let blocker = 0;
    const test = open(deals);
    for (const h of test) {
      value +=
        probability(applyChange(h, { kind: 'value', value: 150_000 }, now), model) -
        probability(applyChange(h, { kind: 'value', value: 5_000 }, now), model);
      competitor +=
        probability(applyChange(withoutCompetition(h), { kind: 'competitor' }, now), model) -
        probability(withoutCompetition(h), model);
      blocker +=
        probability(applyChange(h, { kind: 'negative_blocker' }, now), model) - probability(h, model);
    }
    // The generating process says about -31, -14 and -21 points on these deals (npm run eval:ai).
    expect(value / test.length).toBeLessThan(-15);
    expect(competitor / test.length).toBeLessThan(-7);
    expect(blocker / test.length).toBeLessThan(-10);
  });

  it('is deterministic', () => {
    expect(JSON.stringify(fitWinModel(history(deals), now))).toBe(JSON.stringify(model));
  });
});

describe('a feature the history does not support barely moves the answer', () => {
  const deals = organization(42);

  it('a competitor, when no deal of the history mentioned one', () => {
    const model = fitWinModel(history(deals).map(withoutCompetition), now);
    expect(model && coefficient(model, 'competitor')).toBe(0);
    for (const h of open(deals).slice(0, 50).map(withoutCompetition)) {
      const moved = probability(applyChange(h, { kind: 'competitor' }, now), model) - probability(h, model);
      expect(Math.abs(moved)).toBeLessThanOrEqual(1);
    }
  });

  it('a competitor, when only two deals of 400 mentioned one', () => {
    const past = history(deals).map(withoutCompetition);
    const lost = past.filter((h) => h.stageName === 'Dropped').slice(0, 2);
    for (const h of lost) h.deal.notes = `${h.deal.notes} Competitor Initech pitched a lower price.`;
    const model = fitWinModel(past, now);
    let worst = 0;
    for (const h of open(deals).slice(0, 50).map(withoutCompetition)) {
      const moved = probability(applyChange(h, { kind: 'competitor' }, now), model) - probability(h, model);
      worst = Math.min(worst, moved);
    }
    expect(worst).toBeGreaterThanOrEqual(-1);
  });

  it('a lead source seen in fewer than the minimum number of deals is no feature', () => {
    const past = history(deals).map((h, i) => ({
      ...h,
      deal: { ...h.deal, leadSource: i < MIN_LEAD_SOURCE_DEALS - 1 ? 'Podcast' : h.deal.leadSource },
    }));
    const model = fitWinModel(past, now);
    expect(model?.context.leadSources).not.toContain('Podcast');
    for (const h of open(deals).slice(0, 30)) {
      const podcast = { ...h, deal: { ...h.deal, leadSource: 'Podcast' } };
      const none = { ...h, deal: { ...h.deal, leadSource: null } };
      expect(probability(podcast, model)).toBe(probability(none, model));
    }
  });

  it('a lead source of just enough deals, all of them won, moves the answer only part of the way', () => {
    const past = history(deals);
    const won = past.filter((h) => h.stageName === 'Signed').slice(0, MIN_LEAD_SOURCE_DEALS);
    for (const h of won) h.deal = { ...h.deal, leadSource: 'Podcast' };
    const model = fitWinModel(past, now);
    expect(model?.context.leadSources).toContain('Podcast');
    for (const h of open(deals).slice(0, 50)) {
      const podcast = { ...h, deal: { ...h.deal, leadSource: 'Podcast' } };
      const none = { ...h, deal: { ...h.deal, leadSource: null } };
      const moved = probability(podcast, model) - probability(none, model);
      expect(moved).toBeGreaterThanOrEqual(0);
      expect(moved).toBeLessThanOrEqual(30);
    }
  });

  it('with the minimum history, no deal is called near-certain', () => {
    const few = history(deals).slice(0, MIN_CLOSED_DEALS + 5);
    const model = fitWinModel(few, now);
    expect(model).not.toBeNull();
    const answers = open(deals).map((h) => probability(h, model));
    expect(Math.max(...answers)).toBeLessThanOrEqual(97);
    expect(Math.min(...answers)).toBeGreaterThanOrEqual(3);
  });

  it('trains on as many rows as snapshots, one feature vector each', () => {
    const set = trainingSet(history(deals), now);
    expect(set.x.length).toBe(set.y.length);
    expect(set.x[0]?.length).toBe(featureSpecs(set.context).length);
  });
});

describe('graph and custom-field features are learned only when the history shows they help', () => {
  // 400 closed deals of organization A's process, with logged calls, tasks and two custom fields (graph.ts).
  const base = syntheticDeals({ deals: 700, now, seed: 3 }).filter(
    (d) => d.history.stages.find((s) => s.name === d.history.stageName)?.type !== 'open',
  );
  const closed = (deals: SyntheticDeal[]) => deals.slice(0, 400).map((d) => d.history);

  it('kept where they carry the outcome: held-out loss lower, signs as documented, answers move their way', () => {
    const deals = withGraph(base, 5, 'helpful');
    const model = fitWinModel(closed(deals), now);
    if (!model) throw new Error('no model');
    const kept = Object.fromEntries(model.candidates.map((c) => [c.group, c.kept]));
    // The segment's effect is too weak for 400 deals to show beyond the graph (the eval's 2,500 show it).
    expect(kept).toMatchObject({ graph: true, 'custom.segment': false, 'custom.budget': true });
    for (const c of model.candidates.filter((c) => c.kept)) expect(c.loss).toBeLessThan(c.baseLoss);
    expect(coefficient(model, 'met_stakeholders')).toBeGreaterThan(0);
    expect(coefficient(model, 'overdue_tasks')).toBeLessThanOrEqual(0);
    expect(coefficient(model, 'two_way_idle')).toBeLessThanOrEqual(0);
    expect(coefficient(model, 'custom:budget')).toBeGreaterThan(0);
    expect(coefficient(model, 'custom:segment=enterprise')).toBe(0);
    // A deal's explanation names the custom field by its label and key.
    const h = deals[450]?.history as DealHistory;
    const p = predictSnapshot(snapshotAt(h, new Date(h.deal.createdAt.getTime() + 86_400_000)), {
      staleAfterDays: 14,
      winModel: model,
    });
    expect(p.factors.map((f) => f.description).join(' ')).toMatch(
      /Budget \(custom\.budget\) [\d,]+ against the typical [\d,]+/,
    );
  });

  it('not kept where they are noise, nor where the history has none of them', () => {
    const noise = fitWinModel(closed(withGraph(base, 5, 'noise')), now);
    expect(noise?.candidates.map((c) => c.group).sort()).toEqual([
      'custom.budget',
      'custom.segment',
      'graph',
    ]);
    expect(noise?.candidates.filter((c) => c.kept)).toEqual([]);
    for (const key of ['met_stakeholders', 'two_way_idle', 'overdue_tasks', 'custom:budget'])
      expect(coefficient(noise as NonNullable<typeof noise>, key)).toBe(0);
    // Without logged activities or custom fields: nothing to try, the same fit as a model that omits them.
    const plain = fitWinModel(closed(base), now);
    const omitted = fitWinModel(closed(base), now, ['graph', 'custom', 'history']);
    expect(plain?.candidates).toEqual([]);
    expect(plain?.model.coefficients.slice(0, omitted?.model.coefficients.length)).toEqual(
      omitted?.model.coefficients,
    );
  });
});

describe('field history features are learned only when the history shows they help', () => {
  // 977 closed deals: with 400 the pushes' effect (0.49 → 0.47 held-out log-loss here) is within the noise.
  const base = syntheticDeals({ deals: 1_000, now, seed: 3 }).filter(
    (d) => d.history.stages.find((s) => s.name === d.history.stageName)?.type !== 'open',
  );
  const closed = (deals: SyntheticDeal[]) => deals.map((d) => d.history);

  it('close date pushes kept where they carry the outcome, with a negative coefficient', () => {
    const model = fitWinModel(closed(withFieldHistory(base, 9, 'helpful')), now);
    if (!model) throw new Error('no model');
    const pushes = model.candidates.find((c) => c.group === 'close_date_pushes');
    expect(pushes?.kept).toBe(true);
    expect(pushes?.loss).toBeLessThan(pushes?.baseLoss as number);
    expect(coefficient(model, 'close_date_pushes')).toBeLessThan(0);
    // The organization's typical days per stage, for the analysis: the stages its deals left.
    expect(Object.keys(model.context.stageDays ?? {}).length).toBeGreaterThan(0);
  });

  it('not kept where the pushes are noise; without field history nothing is tried', () => {
    const noise = fitWinModel(closed(withFieldHistory(base, 9, 'noise')), now);
    expect(noise?.candidates.find((c) => c.group === 'close_date_pushes')?.kept).toBe(false);
    expect(coefficient(noise as NonNullable<typeof noise>, 'close_date_pushes')).toBe(0);
    const plain = fitWinModel(closed(base), now);
    expect(plain?.candidates).toEqual([]);
    expect(plain?.context.stageDays).toBeUndefined();
  });
});
