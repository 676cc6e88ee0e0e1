import { idleDays, SUPPORT_PILLARS } from '../analysis/pillars.ts';
import { closedAt, DAY_MS, type DealHistory, type DealSnapshot, snapshotAt } from '../history.ts';
import {
  contextOf,
  type DealReading,
  describeFactor,
  type FactorId,
  type FactorKey,
  type FeatureContext,
  type FeatureGroup,
  type FeatureSpec,
  factorLabel,
  featureSpecs,
  featureVector,
  GRAPH_FEATURES,
  HISTORY_FEATURES,
  logit,
  NO_CONTEXT,
  readDeal,
  sigmoid,
  stageProbability,
  typicalStageDays,
} from './features.ts';
import { contributions, fitLogistic, type LogisticModel, predictLogistic } from './logistic-regression.ts';

/** The fitted model needs at least this many closed deals, and this many of each outcome. */
export const MIN_CLOSED_DEALS = 30;
export const MIN_PER_OUTCOME = 5;
/** A feature is learned only when at least this many deals of the history differ from its most common value. */
export const MIN_FEATURE_DEALS = 10;
/** Training snapshots: one every 14 days of a deal's open life, over the last two years, newest 5,000 deals. */
export const SNAPSHOT_EVERY_DAYS = 14;
export const HISTORY_DAYS = 730;
export const HISTORY_MAX_DEALS = 5_000;
/** Ridge penalty: strong enough that 30 deals cannot produce a 99% deal. */
const L2 = 5;

export interface FittedWinModel {
  model: LogisticModel;
  /** The organization's typical value and frequent lead sources, as the history showed them. */
  context: FeatureContext;
  /** The feature keys, in the order of the model's coefficients. */
  features: string[];
  closedDeals: number;
  won: number;
  fittedAt: Date;
  /**
   * The candidate groups (the graph's features; each number or select custom field) the history varied on,
   * whether held-out deals showed they help (kept), and the held-out log-loss before and with each.
   */
  candidates: CandidateResult[];
}

export interface CandidateResult {
  group: string;
  kept: boolean;
  baseLoss: number;
  loss: number;
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
  /** Every factor with its share of the log-odds, largest first (the lists above are the top of it). */
  factors: Array<PredictionFactor & { log_odds: number }>;
}

export interface TrainingSnapshots {
  snapshots: DealSnapshot[];
  y: number[];
  /** Which deal (0-based, in order of appearance) each snapshot belongs to. */
  deal: number[];
  deals: number;
  won: number;
  /** When each deal closed (ms), by deal index. */
  closed: number[];
}

export interface TrainingSet {
  x: number[][];
  y: number[];
  /** Which deal each row belongs to. */
  deal: number[];
  deals: number;
  won: number;
  closed: number[];
  context: FeatureContext;
  specs: FeatureSpec[];
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

/** The labelled snapshots of an organization's closed deals, as the model is trained on them. */
export function trainingSnapshots(histories: DealHistory[], now: Date): TrainingSnapshots {
  const set: TrainingSnapshots = { snapshots: [], y: [], deal: [], deals: 0, won: 0, closed: [] };
  const labelled = histories.map((h) => ({ h, l: labelledSnapshotTimes(h, now) }));
  // Before the first recorded close, history shows only the deals that survived to be recorded (imported
  // data often starts that way): snapshots from then would overstate the win rate.
  const firstClose = Math.min(...labelled.filter((x) => x.l).map((x) => closedAt(x.h).getTime()));
  for (const { h, l } of labelled) {
    if (!l) continue;
    const times = l.times.length > 1 ? l.times.filter((t) => t.getTime() >= firstClose) : l.times;
    if (times.length === 0) continue;
    for (const t of times) {
      set.snapshots.push(snapshotAt(h, t));
      set.y.push(l.label);
      set.deal.push(set.deals);
    }
    set.deals++;
    set.won += l.label;
    set.closed.push(closedAt(h).getTime());
  }
  return set;
}

/** Each training deal as last seen before it closed: what the organization's typical deal is read from. */
function lastSnapshots(set: TrainingSnapshots): DealSnapshot[] {
  const last = new Map<number, DealSnapshot>();
  set.snapshots.forEach((s, i) => {
    last.set(set.deal[i] as number, s);
  });
  return [...last.values()];
}

/** The training rows of an organization's closed deals: one feature vector per snapshot. */
export function trainingSet(histories: DealHistory[], now: Date, omit: FeatureGroup[] = []): TrainingSet {
  const snapshots = trainingSnapshots(histories, now);
  const stageDays = typicalStageDays(histories);
  const context: FeatureContext = {
    ...contextOf(lastSnapshots(snapshots)),
    ...(omit.length > 0 ? { omit } : {}),
    ...(Object.keys(stageDays).length > 0 ? { stageDays } : {}),
  };
  const specs = featureSpecs(context);
  return {
    x: snapshots.snapshots.map((s) => featureVector(readDeal(s), specs, context)),
    y: snapshots.y,
    deal: snapshots.deal,
    deals: snapshots.deals,
    won: snapshots.won,
    closed: snapshots.closed,
    context,
    specs,
  };
}

/**
 * Whether the history supports learning each feature: at least MIN_FEATURE_DEALS deals whose value differs
 * from the feature's most common one (a competitor named in two deals of 400 teaches nothing reliable).
 * An unsupported feature keeps a coefficient of 0 and never moves an answer.
 */
function supported(set: TrainingSet): boolean[] {
  return set.specs.map((_, j) => {
    const counts = new Map<number, Set<number>>();
    set.x.forEach((row, i) => {
      const v = row[j] as number;
      const deals = counts.get(v) ?? new Set<number>();
      deals.add(set.deal[i] as number);
      counts.set(v, deals);
    });
    const common = [...counts].sort((a, b) => b[1].size - a[1].size)[0]?.[0];
    const differing = new Set<number>();
    for (const [v, deals] of counts) if (v !== common) for (const d of deals) differing.add(d);
    return differing.size >= MIN_FEATURE_DEALS;
  });
}

/**
 * Which candidate group a feature belongs to: the graph's, a history feature's own (`close_date_pushes`,
 * `stage_days`), a custom field's (`custom.<key>`), or none.
 */
export const candidateOf = (f: FeatureSpec): string | null =>
  GRAPH_FEATURES.has(f.key)
    ? 'graph'
    : HISTORY_FEATURES.has(f.key) || f.factor.startsWith('custom.')
      ? f.factor
      : null;

/** The latest-closed share of the history's deals held out to test whether a candidate group helps. */
const HOLD_OUT_SHARE = 0.3;
/** Held-out deals of each outcome needed for that test; with fewer, no candidate is learned. */
const MIN_HOLD_OUT_PER_OUTCOME = 10;
/** How many standard errors the held-out deals' mean gain in log-loss must clear. */
const GAIN_STANDARD_ERRORS = 2;

/**
 * Which candidate groups the history shows help: each is fitted with the model's other features (and the
 * groups kept before it) on the deals that closed first, and kept when it lowers the log-loss of the HOLD_OUT_SHARE that closed last (a
 * temporal split, as the model is used: fitted on the past, asked about later deals) by more than
 * GAIN_STANDARD_ERRORS standard errors of the held-out deals' gains (each deal's mean over its snapshots,
 * so a long deal counts once). Groups the history does not vary on are not tried and cost no fit: an
 * organization without logged activities or custom fields fits exactly as before.
 */
function selectCandidates(
  set: TrainingSet,
  base: boolean[],
  groups: Map<string, number[]>,
  fit: (rows: number[], fixed: boolean[]) => LogisticModel,
): CandidateResult[] {
  if (groups.size === 0) return [];
  const order = set.closed.map((t, d) => ({ t, d })).sort((a, b) => a.t - b.t || a.d - b.d);
  const held = new Set(order.slice(Math.floor(order.length * (1 - HOLD_OUT_SHARE))).map((x) => x.d));
  const rows = set.y.map((_, i) => i);
  const train = rows.filter((i) => !held.has(set.deal[i] as number));
  const test = rows.filter((i) => held.has(set.deal[i] as number));
  const heldWon = new Set(test.filter((i) => set.y[i] === 1).map((i) => set.deal[i])).size;
  if (heldWon < MIN_HOLD_OUT_PER_OUTCOME || held.size - heldWon < MIN_HOLD_OUT_PER_OUTCOME)
    return [...groups.keys()].map((group) => ({
      group,
      kept: false,
      baseLoss: Number.NaN,
      loss: Number.NaN,
    }));
  /** Each held-out deal's mean log-loss over its snapshots. */
  const lossByDeal = (model: LogisticModel) => {
    const sums = new Map<number, { sum: number; n: number }>();
    for (const i of test) {
      const p = Math.min(1 - 1e-9, Math.max(1e-9, predictLogistic(model, set.x[i] as number[])));
      const e = sums.get(set.deal[i] as number) ?? { sum: 0, n: 0 };
      e.sum -= set.y[i] === 1 ? Math.log(p) : Math.log(1 - p);
      e.n++;
      sums.set(set.deal[i] as number, e);
    }
    return new Map([...sums].map(([d, e]) => [d, e.sum / e.n]));
  };
  const mean = (v: number[]) => v.reduce((a, b) => a + b, 0) / v.length;
  // Forward, one group at a time in order (the graph's first, then the fields as defined): each is
  // tried on top of those already kept, so a field is judged by what it adds to them.
  let current = [...base];
  let currentLosses = lossByDeal(fit(train, current));
  return [...groups].map(([group, indices]) => {
    const fixed = [...current];
    for (const j of indices) fixed[j] = false;
    const losses = lossByDeal(fit(train, fixed));
    const gains = [...losses].map(([d, l]) => (currentLosses.get(d) as number) - l);
    const g = mean(gains);
    const se = Math.sqrt(gains.reduce((a, x) => a + (x - g) ** 2, 0) / (gains.length - 1) / gains.length);
    const result = {
      group,
      kept: g > GAIN_STANDARD_ERRORS * se,
      baseLoss: mean([...currentLosses.values()]),
      loss: mean([...losses.values()]),
    };
    if (result.kept) {
      current = fixed;
      currentLosses = losses;
    }
    return result;
  });
}

/**
 * Fits the organization's model from its closed deals, or answers null below the documented minimum.
 * `omit` leaves groups of features out (the eval's comparison; the service uses them all).
 */
export function fitWinModel(
  histories: DealHistory[],
  now: Date,
  omit: FeatureGroup[] = [],
): FittedWinModel | null {
  const set = trainingSet(histories, now, omit);
  if (set.deals < MIN_CLOSED_DEALS || set.won < MIN_PER_OUTCOME || set.deals - set.won < MIN_PER_OUTCOME)
    return null;
  const ok = supported(set);
  const fit = (rows: number[], fixed: boolean[]) =>
    fitLogistic(
      rows.map((i) => set.x[i] as number[]),
      rows.map((i) => set.y[i] as number),
      { l2: L2, scales: set.specs.map((f) => f.unit), signs: set.specs.map((f) => f.sign), fixed },
    );
  // Candidates the history varies on, by group; the base model holds every candidate at 0.
  const groups = new Map<string, number[]>();
  set.specs.forEach((f, j) => {
    const group = candidateOf(f);
    if (group && ok[j]) groups.set(group, [...(groups.get(group) ?? []), j]);
  });
  const base = set.specs.map((f, j) => !ok[j] || candidateOf(f) !== null);
  const candidates = selectCandidates(set, base, groups, fit);
  const fixed = [...base];
  for (const c of candidates) if (c.kept) for (const j of groups.get(c.group) ?? []) fixed[j] = false;
  return {
    model: fit(
      set.y.map((_, i) => i),
      fixed,
    ),
    context: set.context,
    features: set.specs.map((f) => f.key),
    closedDeals: set.deals,
    won: set.won,
    fittedAt: now,
    candidates,
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

const ACTION_FOR: Record<FactorKey, string> = {
  stage: 'Advance the deal to the next stage once its requirements are met (see the analysis)',
  metrics: 'Quantify the business case with the customer and record it',
  economic_buyer: 'Meet the economic buyer and confirm budget and sign-off authority',
  decision_criteria: 'Agree the written decision criteria with the technical buyer',
  decision_process: 'Map the decision process and set a realistic close date',
  paper_process: 'Start legal and procurement steps early',
  identified_pain: 'Document the business pain and confirm it with the customer',
  champion: 'Develop an engaged, influential champion',
  stakeholders: 'Multi-thread: involve more people on the customer side',
  engagement: 'Get more of the customer’s stakeholders actively engaged',
  positive_stakeholders: 'Win over the stakeholders: find out what each of them needs from the deal',
  positive_notes: 'Confirm the customer’s interest: ask for a concrete commitment',
  activity: 'Raise the cadence: schedule the next meeting now',
  idle: 'Re-engage the customer: the deal has gone quiet',
  age: 'Qualify hard: decide whether the deal is still real',
  moved_back: 'Find out what sent the deal back a stage and fix it',
  value: 'Confirm the deal’s value and scope: deals of this size win less often here',
  lead_source: 'Qualify early: deals from this lead source win less often here',
  close_date: 'Agree a realistic close date with the customer',
  competitor: 'Find out where the competitor stands and how to win against them',
  blockers: 'Meet the blocker: understand the objection and address it',
  negative_stakeholders: 'Address the concerns of the negative stakeholders',
  negative_notes: 'Resolve the concerns recorded in the notes',
  two_way: 'Talk to the customer: book a call or meeting with the stakeholders',
  overdue_tasks: 'Complete or reschedule the overdue tasks',
  close_date_pushes: 'Confirm the close date with the economic buyer: ask what moved it',
  stage_days: 'Agree the step that moves the deal out of its stage, with a date',
};

const actionFor = (key: FactorId, context: FeatureContext) =>
  key.startsWith('custom.')
    ? `Review ${factorLabel(key, context)} (${key}): deals with this value win less often here`
    : ACTION_FOR[key as FactorKey];

interface Contribution {
  key: FactorId;
  logOdds: number;
}

/** Bad news in the prior: each lowers the log-odds, none ever raises them. */
export const PRIOR_PENALTIES = {
  competitor: -0.6,
  /** Per blocker, up to two. */
  blocker: -0.7,
  /** Per stakeholder with negative sentiment (blockers included), up to three. */
  negativeStakeholder: -0.5,
  /** Per note voicing concerns or setbacks, up to three. */
  negativeNote: -0.2,
  overdueCloseDate: -0.3,
} as const;

/**
 * The prior before an organization has enough history: the stage's probability, moved by the seven support
 * pillars and the momentum of the deal's supportive view (so bad news never counts as support), then
 * lowered by each piece of bad news on its own. Competition, a blocker or negative sentiment can only lower it.
 */
function priorContributions(r: DealReading, staleAfterDays: number): Contribution[] {
  const { s, support } = r;
  const out: Contribution[] = [{ key: 'stage', logOdds: logit(stageProbability(s)) }];
  // All seven at 10/10 add +1 log-odds, all at 0 take 1 away.
  for (const pillar of SUPPORT_PILLARS) {
    const score = r.pillars.get(pillar)?.score ?? 0;
    out.push({ key: pillar, logOdds: (2 * (score / 10 - 0.5)) / SUPPORT_PILLARS.length });
  }
  if (s.stage.type === 'open') {
    const idle = r.supportIdle;
    out.push({ key: 'idle', logOdds: idle > 2 * staleAfterDays ? -0.8 : idle > staleAfterDays ? -0.4 : 0 });
  }
  const people = support.contacts.length;
  out.push({ key: 'stakeholders', logOdds: people >= 3 ? 0.2 : people === 0 ? -0.3 : 0 });
  const blockers = s.contacts.filter((c) => c.role === 'blocker').length;
  const negative = s.contacts.filter((c) => c.sentiment === 'negative').length;
  const close = s.deal.expectedCloseDate;
  out.push(
    { key: 'competitor', logOdds: r.texts.competitor > 0 ? PRIOR_PENALTIES.competitor : 0 },
    { key: 'blockers', logOdds: PRIOR_PENALTIES.blocker * Math.min(blockers, 2) },
    { key: 'negative_stakeholders', logOdds: PRIOR_PENALTIES.negativeStakeholder * Math.min(negative, 3) },
    { key: 'negative_notes', logOdds: PRIOR_PENALTIES.negativeNote * Math.min(r.texts.negative, 3) },
    {
      key: 'close_date',
      logOdds: close && close.getTime() < s.asOf.getTime() ? PRIOR_PENALTIES.overdueCloseDate : 0,
    },
  );
  return out;
}

/** The fitted model's log-odds for a deal, by explanation factor (each relative to the history's average deal). */
function fittedContributions(r: DealReading, fitted: FittedWinModel): { parts: Contribution[]; z: number } {
  const specs = featureSpecs(fitted.context);
  const x = featureVector(r, specs, fitted.context);
  const c = contributions(fitted.model, x);
  const byFactor = new Map<FactorId, number>();
  specs.forEach((f, j) => {
    byFactor.set(f.factor, (byFactor.get(f.factor) ?? 0) + (c[j] as number));
  });
  return {
    parts: [...byFactor].map(([key, logOdds]) => ({ key, logOdds })),
    z: fitted.model.intercept + c.reduce((a, b) => a + b, 0),
  };
}

/** The win probability of a snapshot alone, without the explanation (for evaluations). */
export function winProbability(s: DealSnapshot, options: PredictOptions): number {
  return predictSnapshot(s, options).win_probability;
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
      factors: [],
    };
  }
  const r = readDeal(s);
  const complete = completeness(s, options.staleAfterDays);
  let probability: number;
  let parts: Contribution[];
  let confidence: number;
  const fitted = options.winModel;
  let method: BuiltInPrediction['method'];
  if (fitted) {
    const f = fittedContributions(r, fitted);
    parts = f.parts;
    probability = sigmoid(f.z);
    const historyWeight = fitted.closedDeals / (fitted.closedDeals + 150);
    confidence = (0.4 + 0.55 * historyWeight) * (0.7 + 0.3 * complete);
    method = 'fitted';
  } else {
    parts = priorContributions(r, options.staleAfterDays);
    probability = sigmoid(parts.reduce((a, b) => a + b.logOdds, 0));
    confidence = 0.2 + 0.2 * complete;
    method = 'prior';
  }
  const source =
    method === 'fitted' ? `model fitted on ${fitted?.closedDeals} closed deals` : 'stage-and-pillars prior';
  const context = fitted?.context ?? NO_CONTEXT;
  const factor = (p: Contribution): PredictionFactor => ({
    factor: factorLabel(p.key, context),
    impact: impactOf(p.logOdds),
    description: `${describeFactor(p.key, r, context)} (${p.logOdds >= 0 ? '+' : ''}${p.logOdds.toFixed(2)} log-odds, ${source})`,
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
    action: actionFor(p.key, context),
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
    factors: ranked.map((p) => ({ ...factor(p), log_odds: p.logOdds })),
  };
}
