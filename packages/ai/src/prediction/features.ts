import {
  citeLogged,
  idleDays,
  isAdverse,
  lastMet,
  lastTwoWay,
  PILLAR_LABELS,
  type Pillar,
  type PillarScore,
  quoteOf,
  SUPPORT_PILLARS,
  signalTexts,
  supportPillars,
  supportView,
} from '../analysis/pillars.ts';
import {
  type ContactFacts,
  citeMove,
  type DealHistory,
  type DealSnapshot,
  daysBetween,
  overdueTasks,
  stageDaysSpent,
} from '../history.ts';

/**
 * What the win model sees of a deal, all as of the snapshot. Two kinds, never mixed in one feature:
 * - support: the stage, the seven support pillars (MEDDPICC without competition) and the stakeholders,
 *   read from the deal's supportive view (adverse contacts and sentences of bad news set aside), so
 *   they can only count for the deal;
 * - risks: a competitor mentioned, blockers, negative stakeholders, concerns in the notes, an overdue close
 *   date, going quiet, stage moves back, each on its own;
 * plus the plain facts that may go either way in an organization's history: the deal's value against the
 * organization's typical deal, its lead source, its expected close date, stakeholder count, activity, age.
 *
 * Each feature belongs to one explanation factor (a factor may gather a few features about the same fact,
 * e.g. the champion's pillar, presence and engagement) and has a sign the fit must respect (+1 support,
 * -1 risk, 0 either) and a unit: the change in it that the L2 penalty treats as one step (0.5 for a yes/no).
 */

export const FACTORS = [
  'stage',
  ...SUPPORT_PILLARS,
  'stakeholders',
  'engagement',
  'positive_stakeholders',
  'positive_notes',
  'activity',
  'idle',
  'age',
  'moved_back',
  'value',
  'lead_source',
  'close_date',
  'competitor',
  'blockers',
  'negative_stakeholders',
  'negative_notes',
  'two_way',
  'overdue_tasks',
  'close_date_pushes',
  'stage_days',
] as const;
export type FactorKey = (typeof FACTORS)[number];
/** An explanation factor: a fixed one, or a custom field of the organization (`custom.<key>`). */
export type FactorId = FactorKey | `custom.${string}`;

export const FACTOR_LABELS: Record<FactorKey, string> = {
  stage: 'Stage probability',
  metrics: PILLAR_LABELS.metrics,
  economic_buyer: PILLAR_LABELS.economic_buyer,
  decision_criteria: PILLAR_LABELS.decision_criteria,
  decision_process: PILLAR_LABELS.decision_process,
  paper_process: PILLAR_LABELS.paper_process,
  identified_pain: PILLAR_LABELS.identified_pain,
  champion: PILLAR_LABELS.champion,
  stakeholders: 'Stakeholders mapped',
  engagement: 'Engaged stakeholders',
  positive_stakeholders: 'Positive stakeholders',
  positive_notes: 'Positive notes',
  activity: 'Activity volume',
  idle: 'Days since last activity',
  age: 'Deal age',
  moved_back: 'Stage moves back',
  value: 'Deal value',
  lead_source: 'Lead source',
  close_date: 'Expected close date',
  competitor: 'Competitor',
  blockers: 'Blockers',
  negative_stakeholders: 'Negative stakeholders',
  negative_notes: 'Concerns in notes',
  two_way: 'Calls and meetings',
  overdue_tasks: 'Overdue tasks',
  close_date_pushes: 'Close date pushed',
  stage_days: 'Days in the current stage',
};

/** A factor's label: a custom field's is the field's own. */
export const factorLabel = (factor: FactorId, context: FeatureContext): string =>
  factor.startsWith('custom.')
    ? (context.custom?.find((f) => `custom.${f.key}` === factor)?.label ?? factor)
    : FACTOR_LABELS[factor as FactorKey];

export interface FeatureSpec {
  key: string;
  factor: FactorId;
  /** +1: may only raise the odds; -1: may only lower them; 0: either way. */
  sign: -1 | 0 | 1;
  /** The change the L2 penalty treats as one step. */
  unit: number;
}

/** A number or select custom field as the win model reads it (see contextOf). */
export interface CustomFeature {
  key: string;
  label: string;
  kind: 'number' | 'select';
  /** number: the history's median and spread (1.4826 × the median absolute deviation, or 1). */
  median?: number;
  scale?: number;
  /** select: the options frequent enough in the history to learn from, most frequent first. */
  options?: string[];
}

/** Features a run can leave out (the eval compares with and without them). */
export type FeatureGroup = 'graph' | 'custom' | 'history';

/** What a fitted model knows about its organization, needed to read a deal the same way later. */
export interface FeatureContext {
  /** Median value of the history's deals with a value (null when none had one). */
  typicalValue: number | null;
  /** Lead sources frequent enough in the history to learn from, most frequent first. */
  leadSources: string[];
  /** The organization's number and select custom fields on deals. */
  custom?: CustomFeature[];
  /** Groups of features this model leaves out. */
  omit?: FeatureGroup[];
  /**
   * The median days the history's deals spent in each stage they left (by stage id; stages left by at
   * least MIN_STAGE_DAYS_DEALS deals), from their field history: the typical time the analysis compares with.
   */
  stageDays?: Record<string, number>;
}

export const NO_CONTEXT: FeatureContext = { typicalValue: null, leadSources: [] };

/** A lead source needs this many deals in the history to become a feature (at most MAX_LEAD_SOURCES of them). */
export const MIN_LEAD_SOURCE_DEALS = 10;
const MAX_LEAD_SOURCES = 8;

const FIXED: FeatureSpec[] = [
  { key: 'stage', factor: 'stage', sign: 1, unit: 1 },
  ...SUPPORT_PILLARS.map((p): FeatureSpec => ({ key: p, factor: p, sign: 1, unit: 0.3 })),
  { key: 'economic_buyer_present', factor: 'economic_buyer', sign: 1, unit: 0.5 },
  { key: 'economic_buyer_engaged', factor: 'economic_buyer', sign: 1, unit: 0.5 },
  { key: 'executive_sponsor_present', factor: 'economic_buyer', sign: 1, unit: 0.5 },
  { key: 'technical_buyer_present', factor: 'decision_criteria', sign: 1, unit: 0.5 },
  { key: 'champion_present', factor: 'champion', sign: 1, unit: 0.5 },
  { key: 'champion_engaged', factor: 'champion', sign: 1, unit: 0.5 },
  { key: 'stakeholders', factor: 'stakeholders', sign: 0, unit: 0.5 },
  { key: 'engaged_stakeholders', factor: 'engagement', sign: 1, unit: 1 },
  { key: 'positive_stakeholders', factor: 'positive_stakeholders', sign: 1, unit: 0.5 },
  { key: 'positive_notes', factor: 'positive_notes', sign: 1, unit: 0.5 },
  { key: 'activity', factor: 'activity', sign: 0, unit: 0.5 },
  { key: 'idle', factor: 'idle', sign: -1, unit: 1 },
  { key: 'age', factor: 'age', sign: 0, unit: 1 },
  { key: 'moved_back', factor: 'moved_back', sign: -1, unit: 0.5 },
  { key: 'value_ratio', factor: 'value', sign: 0, unit: 1 },
  { key: 'value_missing', factor: 'value', sign: 0, unit: 0.5 },
  { key: 'close_date_set', factor: 'close_date', sign: 0, unit: 0.5 },
  { key: 'close_date_months', factor: 'close_date', sign: 0, unit: 1 },
  { key: 'close_date_overdue', factor: 'close_date', sign: -1, unit: 0.5 },
  { key: 'competitor', factor: 'competitor', sign: -1, unit: 0.5 },
  { key: 'blockers', factor: 'blockers', sign: -1, unit: 0.5 },
  { key: 'negative_stakeholders', factor: 'negative_stakeholders', sign: -1, unit: 0.5 },
  { key: 'negative_notes', factor: 'negative_notes', sign: -1, unit: 0.5 },
  // The relationship graph: who took part in logged calls and meetings, how long since the last one, open
  // tasks past their due date. In a history without logged activities they are the same for every deal
  // and, like any feature the history does not show varying, never learned.
  { key: 'met_stakeholders', factor: 'two_way', sign: 1, unit: 1 },
  { key: 'two_way_idle', factor: 'two_way', sign: -1, unit: 1 },
  { key: 'overdue_tasks', factor: 'overdue_tasks', sign: -1, unit: 0.5 },
  // The field history (docs/api/history.md), as of the snapshot: how often the close date was pushed and
  // how long the deal has been in its stage. Without history (imported data, the eval's real set) they are
  // 0 for every deal and never learned.
  { key: 'close_date_pushes', factor: 'close_date_pushes', sign: -1, unit: 0.5 },
  { key: 'stage_days', factor: 'stage_days', sign: -1, unit: 1 },
];
/** The graph features (FeatureGroup 'graph'). */
export const GRAPH_FEATURES = new Set(['met_stakeholders', 'two_way_idle', 'overdue_tasks']);

/** The history features, each its own candidate group (named by its factor). */
export const HISTORY_FEATURES = new Set(['close_date_pushes', 'stage_days']);

/** Days in a stage counted at most by the win model. */
const STAGE_DAYS_CAP = 180;
/** Stages left by fewer deals of the history than this have no typical time. */
export const MIN_STAGE_DAYS_DEALS = 10;

/** Days without a call or meeting counted at most (and for a deal that never had one). */
const TWO_WAY_CAP_DAYS = 180;

/**
 * The model's features for an organization: the fixed ones, one per frequent lead source, then its number
 * and select custom fields (a number as its distance from the history's median in spreads, a select one
 * yes/no per frequent option). Either way (sign 0): the history says which way a field goes.
 */
export function featureSpecs(context: FeatureContext): FeatureSpec[] {
  const omit = new Set(context.omit ?? []);
  return [
    ...FIXED.filter(
      (f) =>
        !(omit.has('graph') && GRAPH_FEATURES.has(f.key)) &&
        !(omit.has('history') && HISTORY_FEATURES.has(f.key)),
    ),
    ...context.leadSources.map(
      (source): FeatureSpec => ({ key: `lead_source:${source}`, factor: 'lead_source', sign: 0, unit: 0.5 }),
    ),
    ...(omit.has('custom') ? [] : (context.custom ?? [])).flatMap((f): FeatureSpec[] =>
      f.kind === 'number'
        ? [{ key: `custom:${f.key}`, factor: `custom.${f.key}`, sign: 0, unit: 1 }]
        : (f.options ?? []).map((o) => ({
            key: `custom:${f.key}=${o}`,
            factor: `custom.${f.key}`,
            sign: 0,
            unit: 0.5,
          })),
    ),
  ];
}

/** A number custom value as a number (null when not set or not a finite number). */
const numberOf = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** The custom field a feature key reads, and the option for a select one. */
function customValue(key: string, s: DealSnapshot, context: FeatureContext): number {
  const [name, option] = key.slice('custom:'.length).split(/=(.*)/s) as [string, string | undefined];
  const v = s.deal.custom?.[name];
  if (option !== undefined) return v === option ? 1 : 0;
  const f = context.custom?.find((c) => c.key === name);
  const n = numberOf(v);
  if (n === null || !f || f.median === undefined) return 0;
  return clamp((n - f.median) / (f.scale || 1), -3, 3);
}

export const logit = (p: number) => Math.log(p / (1 - p));
export const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));
const clampP = (p: number) => Math.min(0.98, Math.max(0.02, p));
const clamp = (v: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, v));

/** The stage's configured probability as a fraction (a stage without one counts as a coin flip). */
export const stageProbability = (s: DealSnapshot) => clampP((s.stage.probability ?? 50) / 100);

const engaged = (c: ContactFacts) => c.engagement === 'high' || c.engagement === 'medium';
const leadSourceOf = (s: DealSnapshot) => s.deal.leadSource?.trim() || null;

/**
 * Everything the features and the explanations read from one snapshot, computed once: the deal, its
 * supportive view and support pillars, its adverse contacts and its text signals.
 */
export interface DealReading {
  s: DealSnapshot;
  /** The deal's supportive view (adverse contacts and bad-news sentences set aside). */
  support: DealSnapshot;
  pillars: Map<Pillar, PillarScore>;
  adverse: ContactFacts[];
  idle: number;
  supportIdle: number;
  /** Pieces of text with each signal; `positive` counts the supportive view (a sentence with bad news is no support). */
  texts: { positive: number; positiveAnywhere: number; negative: number; competitor: number };
}

export function readDeal(s: DealSnapshot): DealReading {
  const view = supportView(s);
  const support = view.snapshot;
  return {
    s,
    support,
    pillars: new Map(supportPillars(view).map((p) => [p.pillar, p])),
    adverse: s.contacts.filter(isAdverse),
    idle: idleDays(s),
    supportIdle: idleDays(support),
    texts: {
      positive: signalTexts(support, 'positive').length,
      positiveAnywhere: signalTexts(s, 'positive').length,
      negative: signalTexts(s, 'negative').length,
      competitor: signalTexts(s, 'competitor').length,
    },
  };
}

/** Stakeholders with positive sentiment who are not blockers (a positive blocker is still a blocker). */
const positiveSupporters = (r: DealReading) => r.support.contacts.filter((c) => c.sentiment === 'positive');

/** The deal's value against the organization's typical deal, in e-folds (0 without a value or a typical one). */
function valueRatio(s: DealSnapshot, context: FeatureContext): number {
  const value = s.deal.value ?? 0;
  if (value <= 0 || !context.typicalValue) return 0;
  return clamp(Math.log(value / context.typicalValue), -4, 4);
}

function featureValue(key: string, r: DealReading, context: FeatureContext): number {
  const { s, support } = r;
  const inRole = (role: string) => support.contacts.filter((c) => c.role === role);
  const close = s.deal.expectedCloseDate;
  if (key.startsWith('lead_source:')) return leadSourceOf(s) === key.slice('lead_source:'.length) ? 1 : 0;
  if (key.startsWith('custom:')) return customValue(key, s, context);
  switch (key) {
    case 'stage':
      return logit(stageProbability(s));
    case 'economic_buyer_present':
      return inRole('economic_buyer').length > 0 ? 1 : 0;
    case 'economic_buyer_engaged':
      return inRole('economic_buyer').some(engaged) ? 1 : 0;
    case 'executive_sponsor_present':
      return inRole('executive_sponsor').length > 0 ? 1 : 0;
    case 'technical_buyer_present':
      return inRole('technical_buyer').length > 0 ? 1 : 0;
    case 'champion_present':
      return inRole('champion').length > 0 ? 1 : 0;
    case 'champion_engaged':
      return inRole('champion').some(engaged) ? 1 : 0;
    case 'stakeholders':
      return Math.log1p(support.contacts.length);
    case 'engaged_stakeholders':
      return Math.min(4, support.contacts.filter(engaged).length);
    case 'positive_stakeholders':
      return Math.min(3, positiveSupporters(r).length);
    case 'positive_notes':
      return Math.log1p(r.texts.positive);
    case 'activity':
      return Math.log1p(support.activities.length);
    case 'idle':
      return Math.min(r.supportIdle, 120) / 30;
    case 'age':
      return Math.log1p(Math.max(0, daysBetween(s.deal.createdAt, s.asOf)));
    case 'moved_back':
      return Math.min(2, s.stageMoves.back);
    case 'value_ratio':
      return valueRatio(s, context);
    case 'value_missing':
      return (s.deal.value ?? 0) > 0 ? 0 : 1;
    case 'close_date_set':
      return close ? 1 : 0;
    case 'close_date_months':
      return close ? clamp(daysBetween(s.asOf, close) / 30, -6, 12) : 0;
    case 'close_date_overdue':
      return close && close.getTime() < s.asOf.getTime() ? 1 : 0;
    case 'competitor':
      return r.texts.competitor > 0 ? 1 : 0;
    case 'blockers':
      return Math.min(2, s.contacts.filter((c) => c.role === 'blocker').length);
    case 'negative_stakeholders':
      return Math.min(3, s.contacts.filter((c) => c.sentiment === 'negative').length);
    case 'negative_notes':
      return Math.log1p(r.texts.negative);
    case 'met_stakeholders': {
      const met = lastMet(support);
      return Math.min(4, support.contacts.filter((c) => met.has(c.id)).length);
    }
    case 'two_way_idle': {
      const last = lastTwoWay(support);
      const days = last ? Math.max(0, daysBetween(last.at, s.asOf)) : TWO_WAY_CAP_DAYS;
      return Math.min(days, TWO_WAY_CAP_DAYS) / 30;
    }
    case 'overdue_tasks':
      return Math.min(3, overdueTasks(s).length);
    case 'close_date_pushes':
      return Math.min(3, s.fieldFacts.pushes.length);
    case 'stage_days': {
      const since = s.fieldFacts.stageSince;
      return since ? Math.min(Math.max(0, daysBetween(since, s.asOf)), STAGE_DAYS_CAP) / 30 : 0;
    }
    default: {
      const pillar = r.pillars.get(key as Pillar);
      if (pillar) return pillar.score / 10;
      throw new Error(`unknown feature ${key}`);
    }
  }
}

/** The numeric features of one deal, in the order of `specs`. */
export function featureVector(r: DealReading, specs: FeatureSpec[], context: FeatureContext): number[] {
  return specs.map((f) => featureValue(f.key, r, context));
}

/** What the history says about the organization: its typical value and its frequent lead sources. */
export function contextOf(deals: DealSnapshot[]): FeatureContext {
  const values = deals
    .map((s) => s.deal.value ?? 0)
    .filter((v) => v > 0)
    .sort((a, b) => a - b);
  const mid = values.length / 2;
  const typicalValue =
    values.length === 0
      ? null
      : values.length % 2 === 1
        ? (values[Math.floor(mid)] as number)
        : ((values[mid - 1] as number) + (values[mid] as number)) / 2;
  const counts = new Map<string, number>();
  for (const s of deals) {
    const source = leadSourceOf(s);
    if (source) counts.set(source, (counts.get(source) ?? 0) + 1);
  }
  const leadSources = [...counts]
    .filter(([, n]) => n >= MIN_LEAD_SOURCE_DEALS)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .slice(0, MAX_LEAD_SOURCES)
    .map(([source]) => source);
  return { typicalValue, leadSources, custom: customFeatures(deals) };
}

/** The median days spent in each stage by the deals that left it (see FeatureContext.stageDays). */
export function typicalStageDays(histories: DealHistory[]): Record<string, number> {
  const byStage = new Map<string, number[]>();
  for (const h of histories)
    for (const [stage, days] of stageDaysSpent(h.fieldHistory))
      byStage.set(stage, [...(byStage.get(stage) ?? []), days]);
  const out: Record<string, number> = {};
  for (const [stage, days] of byStage)
    if (days.length >= MIN_STAGE_DAYS_DEALS)
      out[stage] = Math.round(median(days.sort((a, b) => a - b)) * 10) / 10;
  return out;
}

const median = (sorted: number[]) => {
  const mid = sorted.length / 2;
  return sorted.length % 2 === 1
    ? (sorted[Math.floor(mid)] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};

/** The history's number and select custom fields on deals, read as contextOf says. */
function customFeatures(deals: DealSnapshot[]): CustomFeature[] {
  const fields = deals[0]?.customFields ?? [];
  const out: CustomFeature[] = [];
  for (const f of fields) {
    const values = deals.map((s) => s.deal.custom?.[f.key]);
    if (f.type === 'number' || f.type === 'currency') {
      const numbers = values
        .map(numberOf)
        .filter((v): v is number => v !== null)
        .sort((a, b) => a - b);
      if (numbers.length === 0) continue;
      const m = median(numbers);
      const mad = median(numbers.map((v) => Math.abs(v - m)).sort((a, b) => a - b)) * 1.4826;
      out.push({ key: f.key, label: f.label, kind: 'number', median: m, scale: mad > 0 ? mad : 1 });
    } else if (f.type === 'select') {
      const counts = new Map<string, number>();
      for (const v of values) if (typeof v === 'string') counts.set(v, (counts.get(v) ?? 0) + 1);
      const options = [...counts]
        .filter(([, n]) => n >= MIN_LEAD_SOURCE_DEALS)
        .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
        .slice(0, MAX_LEAD_SOURCES)
        .map(([o]) => o);
      if (options.length > 0) out.push({ key: f.key, label: f.label, kind: 'select', options });
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Explanations: every factor says what this deal has or lacks, in words that stay true read alone.

const plural = (n: number, word: string, many = `${word}s`) => `${n} ${n === 1 ? word : many}`;
const names = (people: ContactFacts[]) =>
  people.map((c) => `${c.name} (${c.role.replaceAll('_', ' ')})`).join(', ');
const money = (v: number) => Math.round(v).toLocaleString('en-US');
const day = (d: Date) => d.toISOString().slice(0, 10);

function describeValue(s: DealSnapshot, context: FeatureContext): string {
  const value = s.deal.value ?? 0;
  if (value <= 0) return 'No deal value recorded';
  const amount = `Deal value ${money(value)}${s.deal.currency ? ` ${s.deal.currency}` : ''}`;
  if (!context.typicalValue) return amount;
  const ratio = value / context.typicalValue;
  const times = ratio >= 10 ? ratio.toFixed(0) : ratio >= 1 ? ratio.toFixed(1) : ratio.toFixed(2);
  return `${amount} is ${times}x the typical deal (${money(context.typicalValue)})`;
}

function describeCloseDate(s: DealSnapshot): string {
  const close = s.deal.expectedCloseDate;
  if (!close) return 'No expected close date';
  const days = Math.floor(Math.abs(daysBetween(s.asOf, close)));
  return close.getTime() < s.asOf.getTime()
    ? `Expected close date ${day(close)} passed ${plural(days, 'day')} ago`
    : `Expected close date ${day(close)}, in ${plural(days, 'day')}`;
}

function describePillar(r: DealReading, pillar: Pillar): string {
  const p = r.pillars.get(pillar);
  if (!p) return PILLAR_LABELS[pillar];
  const evidence = [...p.evidence];
  if (pillar === 'economic_buyer') {
    const sponsors = r.support.contacts.filter((c) => c.role === 'executive_sponsor');
    if (sponsors.length > 0 && !evidence.some((e) => e.startsWith('Executive sponsor:')))
      evidence.push(`Executive sponsor also involved: ${sponsors.map((c) => c.name).join(', ')}`);
  }
  return `${PILLAR_LABELS[pillar]} ${p.score}/10: ${evidence.join('; ')}`;
}

function describeCustom(factor: string, s: DealSnapshot, context: FeatureContext): string {
  const key = factor.slice('custom.'.length);
  const f = context.custom?.find((c) => c.key === key);
  const name = `${f?.label ?? key} (${factor})`;
  const v = s.deal.custom?.[key];
  if (v === undefined || v === null || v === '') return `${name} not set`;
  if (f?.kind === 'number') {
    const n = numberOf(v);
    return n === null
      ? `${name} ${String(v)}`
      : `${name} ${n.toLocaleString('en-US')} against the typical ${(f.median ?? 0).toLocaleString('en-US')}`;
  }
  return f?.options?.includes(String(v))
    ? `${name} ${String(v)}`
    : `${name} ${String(v)} (too rare in the history to learn from)`;
}

function describePushes(s: DealSnapshot): string {
  const { pushes } = s.fieldFacts;
  if (pushes.length === 0) return 'Close date never pushed';
  return `Close date pushed ${plural(pushes.length, 'time')} (expected_close_date ${pushes.slice(-3).map(citeMove).join('; ')})`;
}

function describeStageDays(s: DealSnapshot, context: FeatureContext): string {
  const { stageSince, stageId } = s.fieldFacts;
  if (!stageSince) return 'Time in the stage not known (no field history)';
  const days = Math.floor(Math.max(0, daysBetween(stageSince, s.asOf)));
  const typical = stageId ? context.stageDays?.[stageId] : undefined;
  return `In ${s.stage.name} for ${plural(days, 'day')} (since ${day(stageSince)})${typical !== undefined ? `, typically ${plural(typical, 'day')} here` : ''}`;
}

/** The sentence naming what the deal has or lacks for one factor, true of this deal read alone. */
export function describeFactor(factor: FactorId, r: DealReading, context: FeatureContext): string {
  const { s, support } = r;
  if (factor.startsWith('custom.')) return describeCustom(factor, s, context);
  switch (factor as FactorKey) {
    case 'stage':
      return `Stage ${s.stage.name} (${s.stage.probability ?? 'no'}% stage probability)`;
    case 'stakeholders': {
      const n = support.contacts.length;
      const base = n === 0 ? 'No stakeholders mapped' : `${plural(n, 'stakeholder')} mapped`;
      return r.adverse.length > 0
        ? `${base}, not counting ${plural(r.adverse.length, 'negative or blocking one', 'negative or blocking ones')}`
        : base;
    }
    case 'engagement': {
      const people = support.contacts.filter(engaged);
      const adverseEngaged = r.adverse.filter(engaged).length > 0;
      if (people.length === 0)
        return adverseEngaged
          ? 'No engaged stakeholder apart from negative or blocking ones'
          : 'No engaged stakeholder (high or medium engagement)';
      return `${plural(people.length, 'engaged stakeholder')}: ${names(people)}`;
    }
    case 'positive_stakeholders': {
      const people = positiveSupporters(r);
      if (people.length > 0) return `Positive sentiment: ${names(people)}`;
      return s.contacts.some((c) => c.sentiment === 'positive')
        ? 'No stakeholder with positive sentiment apart from blockers'
        : 'No stakeholder with positive sentiment';
    }
    case 'positive_notes': {
      if (r.texts.positive === 0)
        return r.texts.positiveAnywhere > 0
          ? 'No positive words in the notes except alongside bad news'
          : 'No positive words in the notes';
      const others = r.texts.positive < r.texts.positiveAnywhere ? ' (others only alongside bad news)' : '';
      return `Positive words in ${plural(r.texts.positive, 'note')}${others}: ${quoteOf(support, 'positive')}`;
    }
    case 'activity': {
      const n = support.activities.length;
      const left = s.activities.length - n;
      const base = n === 0 ? 'No activities recorded' : `${plural(n, 'activity', 'activities')} recorded`;
      return left > 0
        ? `${base}, not counting ${plural(left, 'entry', 'entries')} that only record bad news`
        : base;
    }
    case 'idle': {
      const all = Math.floor(r.idle);
      const supportive = Math.floor(r.supportIdle);
      if (supportive === all) return `Last activity ${plural(all, 'day')} ago`;
      return `Last activity that is not only bad news ${plural(supportive, 'day')} ago (any activity ${plural(all, 'day')} ago)`;
    }
    case 'age':
      return `Open for ${plural(Math.floor(Math.max(0, daysBetween(s.deal.createdAt, s.asOf))), 'day')}`;
    case 'moved_back':
      return s.stageMoves.back === 0
        ? 'Never moved back a stage'
        : `Moved back ${plural(s.stageMoves.back, 'stage')}`;
    case 'value':
      return describeValue(s, context);
    case 'lead_source': {
      const source = leadSourceOf(s);
      if (!source) return 'No lead source recorded';
      return context.leadSources.includes(source)
        ? `Lead source ${source}`
        : `Lead source ${source} (too rare in the history to learn from)`;
    }
    case 'close_date':
      return describeCloseDate(s);
    case 'competitor':
      return r.texts.competitor === 0
        ? 'No competitor mentioned in the notes'
        : `Competitor mentioned in ${plural(r.texts.competitor, 'note')}: ${quoteOf(s, 'competitor')}`;
    case 'blockers': {
      const people = s.contacts.filter((c) => c.role === 'blocker');
      return people.length === 0
        ? 'No blocker among the stakeholders'
        : `${people.length === 1 ? 'Blocker' : 'Blockers'}: ${people.map((c) => `${c.name}${c.title ? ` (${c.title})` : ''}`).join(', ')}`;
    }
    case 'negative_stakeholders': {
      const people = s.contacts.filter((c) => c.sentiment === 'negative');
      return people.length === 0
        ? 'No stakeholder with negative sentiment'
        : `Negative sentiment: ${names(people)}`;
    }
    case 'negative_notes':
      return r.texts.negative === 0
        ? 'No concerns or setbacks in the notes'
        : `Concerns or setbacks in ${plural(r.texts.negative, 'note')}: ${quoteOf(s, 'negative')}`;
    case 'two_way': {
      const last = lastTwoWay(support);
      if (!last) return 'No call or meeting logged';
      const met = lastMet(support);
      const people = support.contacts.filter((c) => met.has(c.id));
      const days = Math.floor(Math.max(0, daysBetween(last.at, s.asOf)));
      return `Last call or meeting ${plural(days, 'day')} ago (${citeLogged(last)}); ${plural(people.length, 'stakeholder')} took part in one${people.length > 0 ? `: ${names(people)}` : ''}`;
    }
    case 'close_date_pushes':
      return describePushes(s);
    case 'stage_days':
      return describeStageDays(s, context);
    case 'overdue_tasks': {
      const tasks = overdueTasks(s);
      if (tasks.length === 0) return 'No overdue task';
      const first = tasks[0] as (typeof tasks)[number];
      return `${plural(tasks.length, 'overdue task')}, the oldest “${first.subject}” due ${day(first.dueAt as Date)} (${citeLogged(first)})`;
    }
    default:
      return describePillar(r, factor as Pillar);
  }
}
