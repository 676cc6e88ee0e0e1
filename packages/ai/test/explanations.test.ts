import { describe, expect, it } from 'vitest';
import { withFieldHistory } from '../eval/field-history.ts';
import type { SyntheticDeal } from '../eval/scenario.ts';
import { syntheticDeals } from '../eval/synthetic.ts';
import { generatorB } from '../eval/synthetic-b.ts';
import { analyzeSnapshot } from '../src/analysis/model.ts';
import { PILLAR_LABELS, scorePillars } from '../src/analysis/pillars.ts';
import { closedAt, type DealSnapshot, snapshotAt } from '../src/history.ts';
import { NO_CONTEXT } from '../src/prediction/features.ts';
import {
  type BuiltInPrediction,
  type FittedWinModel,
  fitWinModel,
  labelledSnapshotTimes,
  predictSnapshot,
} from '../src/prediction/model.ts';
import { checkAnalysisFactor, checkPredictionFactor, type FactorToCheck } from './truth.ts';

const STALE = 14;
const now = new Date('2026-11-01T00:00:00Z');
const DAY = 86_400_000;

/** Snapshots to explain: every open deal now, and closed deals at a few moments of their open life. */
function snapshotsOf(deals: SyntheticDeal[]): DealSnapshot[] {
  const out: DealSnapshot[] = [];
  deals.forEach((d, i) => {
    const open = d.history.stages.find((s) => s.name === d.history.stageName)?.type === 'open';
    if (open) out.push(snapshotAt(d.history, now));
    else if (i % 3 === 0) {
      const times = labelledSnapshotTimes(d.history, now)?.times ?? [];
      for (const t of times.filter((_, k) => k % 2 === 0)) out.push(snapshotAt(d.history, t));
    }
  });
  return out;
}

function organization(name: string, deals: SyntheticDeal[], cutoff = new Date(now.getTime() - 120 * DAY)) {
  const history = deals.filter((d) => closedAt(d.history) < cutoff).map((d) => d.history);
  const model = fitWinModel(history, cutoff);
  if (!model) throw new Error(`${name}: no model`);
  return { name, model, snapshots: snapshotsOf(deals) };
}

function predictionProblems(s: DealSnapshot, p: BuiltInPrediction, model: FittedWinModel | null): string[] {
  const scores = new Map(
    scorePillars(s, { supportOnly: true }).map((x) => [PILLAR_LABELS[x.pillar], x.score] as [string, number]),
  );
  const context = model?.context ?? NO_CONTEXT;
  return [
    ...p.factors.flatMap((f) => checkPredictionFactor(s, context, { ...f, side: 'any' }, scores)),
    ...p.positive_indicators.flatMap((f) =>
      checkPredictionFactor(s, context, { ...f, side: 'positive' }, scores),
    ),
    ...p.risk_factors.flatMap((f) => checkPredictionFactor(s, context, { ...f, side: 'risk' }, scores)),
    ...p.recommendations.flatMap((r) =>
      p.risk_factors.some((f) => f.description === r.reason) ||
      (p.risk_factors.length === 0 && r.reason === 'No factor lowers the odds noticeably')
        ? []
        : [`recommendation without its risk: ${r.reason}`],
    ),
  ];
}

const ORGANIZATIONS = [
  () => organization('A', syntheticDeals({ deals: 900, now, seed: 21 })),
  () =>
    organization(
      'A + field history',
      withFieldHistory(syntheticDeals({ deals: 900, now, seed: 21 }), 9, 'helpful'),
    ),
  () => organization('B timeline', generatorB({ deals: 900, now, seed: 22, mode: 'timeline' })),
  () =>
    organization('B via the API', generatorB({ deals: 600, now, seed: 23, mode: 'api', closed: 400 }), now),
];

describe('every explanation is true of the deal it explains', () => {
  for (const build of ORGANIZATIONS) {
    const org = build();
    it(`${org.name}: prediction factors (fitted and prior) and analysis factors of ${org.snapshots.length} snapshots`, () => {
      const problems = new Map<string, number>();
      let checked = 0;
      const note = (list: string[], s: DealSnapshot) => {
        for (const p of list) {
          const key = `${p} [deal ${s.deal.title} at ${s.asOf.toISOString()}]`;
          problems.set(key, (problems.get(key) ?? 0) + 1);
        }
      };
      for (const s of org.snapshots) {
        for (const model of [org.model, null]) {
          const p = predictSnapshot(s, { staleAfterDays: STALE, winModel: model });
          checked += p.factors.length;
          note(predictionProblems(s, p, model), s);
        }
        const a = analyzeSnapshot(s, {
          staleAfterDays: STALE,
          typicalStageDays: org.model.context.stageDays,
        });
        const scores = new Map(
          scorePillars(s).map((x) => [PILLAR_LABELS[x.pillar], x.score] as [string, number]),
        );
        checked += a.risk_factors.length + a.win_factors.length;
        for (const f of a.risk_factors) note(checkAnalysisFactor(s, f, 'risk', STALE, scores), s);
        for (const f of a.win_factors) note(checkAnalysisFactor(s, f, 'win', STALE, scores), s);
      }
      expect([...problems.keys()].slice(0, 15)).toEqual([]);
      expect(checked).toBeGreaterThan(5_000);
    });
  }
});

describe('the reader of explanations is not a rubber stamp', () => {
  const deals = generatorB({ deals: 120, now, seed: 24, mode: 'api', closed: 0 });
  const s = deals
    .map((d) => snapshotAt(d.history, now))
    .find(
      (x) => /Competitor|evaluating|Incumbent|Shortlisted/.test(x.deal.notes ?? '') && x.contacts.length > 1,
    );
  const check = (factor: string, description: string, side: 'positive' | 'risk', logOdds: string) =>
    checkPredictionFactor(
      s as DealSnapshot,
      NO_CONTEXT,
      {
        factor,
        description: `${description} (${logOdds} log-odds, model fitted on 400 closed deals)`,
        impact: 'medium',
        side,
      },
      new Map([['Paper process', 0]]),
    );

  it('flags a sentence that says the deal lacks what it has, or has what it lacks', () => {
    expect(s).toBeDefined();
    expect(check('Competitor', 'No competitor mentioned in the notes', 'positive', '+0.30')).not.toEqual([]);
    expect(check('Blockers', 'Blocker: Nobody Here', 'risk', '-0.30')).not.toEqual([]);
  });

  it('flags the old wordings and a lack presented as a strength', () => {
    expect(
      check('Negative notes and stakeholders', 'Negative mentions in notes', 'positive', '+0.32'),
    ).not.toEqual([]);
    expect(check('Paper process', 'Paper process 0/10: no evidence', 'positive', '+0.30')).not.toEqual([]);
    expect(
      check(
        'Paper process',
        'Paper process 0/10: No contract, legal or procurement step recorded',
        'positive',
        '+0.30',
      ),
    ).not.toEqual([]);
  });

  it('flags bad news listed as a reason for a higher number', () => {
    const competitor = predictSnapshot(s as DealSnapshot, {
      staleAfterDays: STALE,
      winModel: null,
    }).factors.find((f) => f.factor === 'Competitor');
    expect(competitor?.description).toMatch(/^Competitor mentioned in 1 note: “/);
    const flipped = competitor?.description.replace(/\(-(\d\.\d\d) log-odds/, '(+$1 log-odds') ?? '';
    expect(
      checkPredictionFactor(
        s as DealSnapshot,
        NO_CONTEXT,
        { ...(competitor as FactorToCheck), description: flipped, side: 'positive' },
        new Map(),
      ),
    ).not.toEqual([]);
    expect(
      checkAnalysisFactor(
        s as DealSnapshot,
        'Competition strong (8/10): Competition recorded (1 mention)',
        'win',
        STALE,
        new Map([['Competition', 8]]),
      ),
    ).not.toEqual([]);
  });
});
