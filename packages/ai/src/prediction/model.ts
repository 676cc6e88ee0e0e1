import { idleDays, PILLAR_LABELS, type Pillar, type PillarScore, scorePillars } from '../analysis/pillars.ts';
import {
  closedAt,
  DAY_MS,
  type DealHistory,
  type DealSnapshot,
  daysBetween,
  snapshotAt,
} from '../history.ts';
import { FEATURES, type FeatureKey, featureVector, logit, sigmoid, stageProbability } from './features.ts';
import { contributions, fitLogistic, type LogisticModel } from './logistic-regression.ts';

/** The fitted model needs at least this many closed deals, and this many of each outcome. */
export const MIN_CLOSED_DEALS = 30;
export const MIN_PER_OUTCOME = 5;
/** Training snapshots: one every 14 days of a deal's open life, over the last two years, newest 5,000 deals. */
export const SNAPSHOT_EVERY_DAYS = 14;
export const HISTORY_DAYS = 730;
export const HISTORY_MAX_DEALS = 5_000;
/** Ridge penalty: strong enough that 30 deals cannot produce a 99% deal. */
const L2 = 5;

export interface FittedWinModel {
  model: LogisticModel;
  closedDeals: number;
  won: number;
  fittedAt: Date;
}

export type Impact = 'high' | 'medium' | 'low';
export interface PredictionFactor {
  factor: string;
  impact: Impact;
  description: string;
}
export interface PredictionRecommendation {
  action: string;
  priority: Impact;
  reason: string;
}

export interface BuiltInPrediction {
  win_probability: number;
  confidence: number;
  risk_factors: PredictionFactor[];
  positive_indicators: PredictionFactor[];
  recommendations: PredictionRecommendation[];
  /** How the number was made: the organization's fitted model, or the stage-and-pillars prior. */
  method: 'fitted' | 'prior' | 'closed';
  /** Closed deals behind a fitted model (0 for the prior). */
  history_size: number;
}

export interface TrainingSet {
  x: number[][];
  y: number[];
  deals: number;
  won: number;
}

/**
 * When a closed deal is looked at for training: every SNAPSHOT_EVERY_DAYS on a calendar grid ending at
 * `now` while the deal was open and more than a day from its close (so edits made while closing it never
 * leak in), or, for a deal open shorter than that, once just before its closing move. Long deals give
 * more snapshots, as they are more often in the open pipeline. Null for an open deal or one closed after `now`.
 */
export function labelledSnapshotTimes(h: DealHistory, now: Date): { label: 0 | 1; times: Date[] } | null {
  const stage = h.stages.find((s) => s.name === h.stageName);
  if (!stage || stage.type === 'open') return null;
  const created = h.deal.createdAt.getTime();
  const closed = closedAt(h).getTime();
  if (closed > now.getTime()) return null;
  const step = SNAPSHOT_EVERY_DAYS * DAY_MS;
  const times: Date[] = [];
  const first = now.getTime() - Math.floor((now.getTime() - created) / step) * step;
  for (let t = first; t < closed - DAY_MS; t += step) times.push(new Date(t));
  if (times.length === 0) times.push(new Date(Math.max(created, closed - 1)));
  return { label: stage.type === 'won' ? 1 : 0, times };
}

/** The training rows of an organization's closed deals: one feature vector per snapshot. */
export function trainingSet(histories: DealHistory[], now: Date): TrainingSet {
  const set: TrainingSet = { x: [], y: [], deals: 0, won: 0 };
  const labelled = histories.map((h) => ({ h, l: labelledSnapshotTimes(h, now) }));
  // Before the first recorded close, history shows only the deals that survived to be recorded (imported
  // data often starts that way): snapshots from then would overstate the win rate.
  const firstClose = Math.min(...labelled.filter((x) => x.l).map((x) => closedAt(x.h).getTime()));
  for (const { h, l } of labelled) {
    if (!l) continue;
    const times = l.times.length > 1 ? l.times.filter((t) => t.getTime() >= firstClose) : l.times;
    if (times.length === 0) continue;
    set.deals++;
    set.won += l.label;
    for (const t of times) {
      const snapshot = snapshotAt(h, t);
      set.x.push(featureVector(snapshot, scorePillars(snapshot)));
      set.y.push(l.label);
    }
  }
  return set;
}

/** Fits the organization's model from its closed deals, or answers null below the documented minimum. */
export function fitWinModel(histories: DealHistory[], now: Date): FittedWinModel | null {
  const set = trainingSet(histories, now);
  if (set.deals < MIN_CLOSED_DEALS || set.won < MIN_PER_OUTCOME || set.deals - set.won < MIN_PER_OUTCOME)
    return null;
  return {
    model: fitLogistic(set.x, set.y, { l2: L2 }),
    closedDeals: set.deals,
    won: set.won,
    fittedAt: now,
  };
}

const impactOf = (logOdds: number): Impact => {
  const a = Math.abs(logOdds);
  return a >= 0.5 ? 'high' : a >= 0.2 ? 'medium' : 'low';
};

/** How complete the deal's own data is, 0..1: people, their engagement, recent activity, a date and a value. */
function completeness(s: DealSnapshot, staleAfterDays: number): number {
  const checks = [
    s.contacts.length >= 2,
    s.contacts.some((c) => c.engagement && c.engagement !== 'unknown'),
    idleDays(s) <= staleAfterDays,
    s.deal.expectedCloseDate !== null,
    (s.deal.value ?? 0) > 0,
  ];
  return checks.filter(Boolean).length / checks.length;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** Names the data behind a feature, for the factor descriptions. */
function describeFeature(key: FeatureKey, s: DealSnapshot, pillars: Map<Pillar, PillarScore>): string {
  const pillar = pillars.get(key as Pillar);
  if (pillar)
    return `${PILLAR_LABELS[pillar.pillar]} ${pillar.score}/10: ${pillar.evidence.join('; ') || 'no evidence'}`;
  switch (key) {
    case 'stage':
      return `Stage ${s.stage.name} (${s.stage.probability ?? 'no'}% stage probability)`;
    case 'stakeholders':
      return `${plural(s.contacts.length, 'stakeholder')} mapped`;
    case 'activity':
      return `${plural(s.activities.length, 'activity')} recorded`.replace('activitys', 'activities');
    case 'idle':
      return `Last activity ${Math.floor(idleDays(s))} day(s) ago`;
    case 'age':
      return `Open for ${Math.floor(daysBetween(s.deal.createdAt, s.asOf))} day(s)`;
    case 'negative_signals': {
      const people = s.contacts
        .filter((c) => c.sentiment === 'negative' || c.role === 'blocker')
        .map((c) => c.name);
      return people.length > 0 ? `Negative or blocking: ${people.join(', ')}` : 'Negative mentions in notes';
    }
    case 'value':
      return s.deal.value
        ? `Value ${s.deal.value.toLocaleString('en-US')} ${s.deal.currency ?? ''}`.trim()
        : 'No value recorded';
    default:
      return key;
  }
}

const ACTION_FOR: Record<FeatureKey, string> = {
  stage: 'Advance the deal to the next stage once its requirements are met (see the analysis)',
  metrics: 'Quantify the business case with the customer and record it',
  economic_buyer: 'Meet the economic buyer and confirm budget and sign-off authority',
  decision_criteria: 'Agree the written decision criteria with the technical buyer',
  decision_process: 'Map the decision process and set a realistic close date',
  paper_process: 'Start legal and procurement steps early',
  identified_pain: 'Document the business pain and confirm it with the customer',
  champion: 'Develop an engaged, influential champion',
  competition: 'Find out who else is evaluated and how to win against them',
  stakeholders: 'Multi-thread: involve more people on the customer side',
  activity: 'Raise the cadence: schedule the next meeting now',
  idle: 'Re-engage the customer: the deal has gone quiet',
  age: 'Qualify hard: decide whether the deal is still real',
  negative_signals: 'Address the concerns of the negative or blocking stakeholders',
  value: 'Confirm the deal’s value and scope',
};

interface Contribution {
  key: FeatureKey;
  logOdds: number;
}

/** The prior before an organization has enough history: the stage's probability moved by the pillars and momentum. */
function priorContributions(s: DealSnapshot, pillars: PillarScore[], staleAfterDays: number): Contribution[] {
  const idle = idleDays(s);
  const out: Contribution[] = [{ key: 'stage', logOdds: logit(stageProbability(s)) }];
  // All eight pillars at 10/10 add +1 log-odds, all at 0 take 1 away.
  for (const p of pillars) out.push({ key: p.pillar, logOdds: (2 * (p.score / 10 - 0.5)) / pillars.length });
  if (s.stage.type === 'open') {
    out.push({ key: 'idle', logOdds: idle > 2 * staleAfterDays ? -0.8 : idle > staleAfterDays ? -0.4 : 0 });
  }
  const negatives = s.contacts.filter((c) => c.sentiment === 'negative' || c.role === 'blocker').length;
  out.push({ key: 'negative_signals', logOdds: -0.3 * Math.min(negatives, 3) });
  out.push({
    key: 'stakeholders',
    logOdds: s.contacts.length >= 3 ? 0.2 : s.contacts.length === 0 ? -0.3 : 0,
  });
  return out;
}

export interface PredictOptions {
  staleAfterDays: number;
  winModel: FittedWinModel | null;
}

/** The built-in prediction: the number, how much data stands behind it, and why. */
export function predictSnapshot(s: DealSnapshot, options: PredictOptions): BuiltInPrediction {
  if (s.stage.type !== 'open') {
    const won = s.stage.type === 'won';
    return {
      win_probability: won ? 100 : 0,
      confidence: 100,
      risk_factors: won
        ? []
        : [{ factor: 'Closed lost', impact: 'high', description: `The deal is in ${s.stage.name}` }],
      positive_indicators: won
        ? [{ factor: 'Closed won', impact: 'high', description: `The deal is in ${s.stage.name}` }]
        : [],
      recommendations: [],
      method: 'closed',
      history_size: options.winModel?.closedDeals ?? 0,
    };
  }
  const pillars = scorePillars(s);
  const byPillar = new Map(pillars.map((p) => [p.pillar, p]));
  const complete = completeness(s, options.staleAfterDays);
  let probability: number;
  let parts: Contribution[];
  let confidence: number;
  const fitted = options.winModel;
  let method: BuiltInPrediction['method'];
  if (fitted) {
    const x = featureVector(s, pillars);
    const c = contributions(fitted.model, x);
    parts = FEATURES.map((f, j) => ({ key: f.key, logOdds: c[j] as number }));
    probability = sigmoid(fitted.model.intercept + c.reduce((a, b) => a + b, 0));
    const historyWeight = fitted.closedDeals / (fitted.closedDeals + 150);
    confidence = (0.4 + 0.55 * historyWeight) * (0.7 + 0.3 * complete);
    method = 'fitted';
  } else {
    parts = priorContributions(s, pillars, options.staleAfterDays);
    probability = sigmoid(parts.reduce((a, b) => a + b.logOdds, 0));
    confidence = 0.2 + 0.2 * complete;
    method = 'prior';
  }
  const source =
    method === 'fitted' ? `model fitted on ${fitted?.closedDeals} closed deals` : 'stage-and-pillars prior';
  const factor = (p: Contribution): PredictionFactor => ({
    factor: FEATURES.find((f) => f.key === p.key)?.label ?? p.key,
    impact: impactOf(p.logOdds),
    description: `${describeFeature(p.key, s, byPillar)} (${p.logOdds >= 0 ? '+' : ''}${p.logOdds.toFixed(2)} log-odds, ${source})`,
  });
  const ranked = [...parts].sort(
    (a, b) => Math.abs(b.logOdds) - Math.abs(a.logOdds) || a.key.localeCompare(b.key),
  );
  const positives = ranked
    .filter((p) => p.logOdds >= 0.05)
    .slice(0, 5)
    .map(factor);
  const risks = ranked.filter((p) => p.logOdds <= -0.05).slice(0, 5);
  const recommendations: PredictionRecommendation[] = risks.slice(0, 3).map((p) => ({
    action: ACTION_FOR[p.key],
    priority: impactOf(p.logOdds),
    reason: factor(p).description,
  }));
  if (recommendations.length === 0)
    recommendations.push({
      action: 'Keep the cadence and confirm the next step with the customer',
      priority: 'low',
      reason: 'No factor lowers the odds noticeably',
    });
  // Never 0 or 100 for an open deal: nothing in a CRM makes the outcome certain.
  const winProbability = Math.min(99, Math.max(1, Math.round(probability * 100)));
  return {
    win_probability: winProbability,
    confidence: Math.round(confidence * 100),
    risk_factors: risks.map(factor),
    positive_indicators: positives,
    recommendations,
    method,
    history_size: fitted?.closedDeals ?? 0,
  };
}
