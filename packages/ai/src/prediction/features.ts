import { idleDays, type PillarScore, textSignals } from '../analysis/pillars.ts';
import { type DealSnapshot, daysBetween } from '../history.ts';

/**
 * What the fitted model sees of a deal, all as of the snapshot: the eight pillar scores, the stage's own
 * probability, and the deal's momentum. Each has a name a person can read in the explanation.
 */
export const FEATURES = [
  { key: 'stage', label: 'Stage probability' },
  { key: 'metrics', label: 'Metrics' },
  { key: 'economic_buyer', label: 'Economic buyer' },
  { key: 'decision_criteria', label: 'Decision criteria' },
  { key: 'decision_process', label: 'Decision process' },
  { key: 'paper_process', label: 'Paper process' },
  { key: 'identified_pain', label: 'Identified pain' },
  { key: 'champion', label: 'Champion' },
  { key: 'competition', label: 'Competition' },
  { key: 'stakeholders', label: 'Stakeholders mapped' },
  { key: 'activity', label: 'Activity volume' },
  { key: 'idle', label: 'Days since last activity' },
  { key: 'age', label: 'Deal age' },
  { key: 'negative_signals', label: 'Negative notes and stakeholders' },
  { key: 'value', label: 'Deal value' },
] as const;
export type FeatureKey = (typeof FEATURES)[number]['key'];

export const logit = (p: number) => Math.log(p / (1 - p));
export const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));
const clampP = (p: number) => Math.min(0.98, Math.max(0.02, p));

/** The stage's configured probability as a fraction (a stage without one counts as a coin flip). */
export const stageProbability = (s: DealSnapshot) => clampP((s.stage.probability ?? 50) / 100);

/** The numeric features of one snapshot, in FEATURES order. */
export function featureVector(s: DealSnapshot, pillars: PillarScore[]): number[] {
  const pillar = new Map(pillars.map((p) => [p.pillar, p.score / 10]));
  const signals = textSignals(s);
  const negativePeople = s.contacts.filter((c) => c.sentiment === 'negative' || c.role === 'blocker').length;
  const values: Record<FeatureKey, number> = {
    stage: logit(stageProbability(s)),
    metrics: pillar.get('metrics') ?? 0,
    economic_buyer: pillar.get('economic_buyer') ?? 0,
    decision_criteria: pillar.get('decision_criteria') ?? 0,
    decision_process: pillar.get('decision_process') ?? 0,
    paper_process: pillar.get('paper_process') ?? 0,
    identified_pain: pillar.get('identified_pain') ?? 0,
    champion: pillar.get('champion') ?? 0,
    competition: pillar.get('competition') ?? 0,
    stakeholders: Math.log1p(s.contacts.length),
    activity: Math.log1p(s.activities.length),
    idle: Math.min(idleDays(s), 120) / 30,
    age: Math.log1p(Math.max(0, daysBetween(s.deal.createdAt, s.asOf))),
    negative_signals: Math.log1p(signals.negative + negativePeople),
    value: Math.log1p(Math.max(0, s.deal.value ?? 0)),
  };
  return FEATURES.map((f) => values[f.key]);
}
