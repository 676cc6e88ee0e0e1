import { type CloseDateMove, citeMove, type DealSnapshot, daysBetween, overdueTasks } from '../history.ts';
import {
  citeLogged,
  engagedContacts,
  idleDays,
  PILLAR_LABELS,
  PILLAR_MAX,
  PILLARS,
  type Pillar,
  type PillarScore,
  quoteOf,
  scorePillars,
  textSignals,
} from './pillars.ts';

/** Score bands of total_score (0..100). */
export const SCORE_BANDS = [
  { band: 'strong', from: 75 },
  { band: 'on_track', from: 55 },
  { band: 'needs_attention', from: 35 },
  { band: 'at_risk', from: 0 },
] as const;
export type ScoreBand = (typeof SCORE_BANDS)[number]['band'];

/** deal_health values: open deals are healthy, at_risk or critical; closed deals say how they closed. */
export const DEAL_HEALTH = ['healthy', 'at_risk', 'critical', 'won', 'lost'] as const;
export type DealHealth = (typeof DEAL_HEALTH)[number];

export const bandOf = (score: number): ScoreBand =>
  SCORE_BANDS.find((b) => score >= b.from)?.band ?? 'at_risk';

export interface AnalysisOptions {
  /** Days without activity after which an open deal is stale (the pipeline-health threshold). */
  staleAfterDays: number;
  /** The organization's median days in each open stage, by stage id (its fitted win model's, when it has one). */
  typicalStageDays?: Record<string, number> | undefined;
}

/**
 * A close date pushed this many times is a risk: one push is ordinary replanning, a second one a pattern
 * (the customer's timeline is not the seller's).
 */
export const PUSHES_RISK = 2;
/** A deal is stuck after this many times its stage's typical days (and never before T, the stale threshold). */
export const STUCK_TYPICAL_TIMES = 2;
/** Without a typical time for its stage (no fitted history), a deal is stuck after this many days. */
export const STUCK_DEFAULT_DAYS = 60;

const day = (d: Date) => d.toISOString().slice(0, 10);
const eventCited = (id: string | null) => (id ? `, event ${id}` : '');

/** The field history's risks: a close date pushed PUSHES_RISK times or more, a deal stuck in its stage. */
function historyRisks(s: DealSnapshot, options: AnalysisOptions): { risks: string[]; actions: string[] } {
  const risks: string[] = [];
  const actions: string[] = [];
  const { pushes, stageSince, stageId, stageEventId } = s.fieldFacts;
  if (pushes.length >= PUSHES_RISK) {
    risks.push(
      `Close date pushed ${pushes.length} times (expected_close_date ${pushes
        .slice(-3)
        .map(citeMove)
        .join('; ')}${pushes.length > 3 ? `; ${pushes.length - 3} earlier` : ''})`,
    );
    actions.push(
      `Confirm the close date with the economic buyer: it was pushed ${pushes.length} times, last to ${day((pushes.at(-1) as CloseDateMove).to)}`,
    );
  }
  if (stageSince) {
    const days = daysBetween(stageSince, s.asOf);
    const typical = stageId ? options.typicalStageDays?.[stageId] : undefined;
    const limit =
      typical !== undefined
        ? Math.max(STUCK_TYPICAL_TIMES * typical, options.staleAfterDays)
        : STUCK_DEFAULT_DAYS;
    if (days > limit) {
      risks.push(
        `Stuck in ${s.stage.name} for ${Math.floor(days)} days (stage_id since ${day(stageSince)}${eventCited(stageEventId)}; ` +
          (typical !== undefined
            ? `deals here typically spend ${typical} days in it)`
            : `no typical time known, stuck after ${STUCK_DEFAULT_DAYS} days)`),
      );
      actions.push(`Agree the step that moves the deal out of ${s.stage.name}, with a date`);
    }
  }
  return { risks, actions };
}

export interface StageReadiness {
  current_stage: string;
  next_stage: string | null;
  ready: boolean | null;
  met: string[];
  missing: string[];
}

/** The built-in analysis: every number and list of the result, and plain-text wording of it. */
export interface BuiltInAnalysis {
  total_score: number;
  score_band: ScoreBand;
  deal_health: DealHealth;
  breakdown: Record<string, unknown>;
  pillar_analyses: Array<Record<string, unknown>>;
  risk_factors: string[];
  win_factors: string[];
  recommended_actions: string[];
  stage_readiness: StageReadiness;
  summary: string;
}

/** What the next stage asks for, by its stage probability: each step up needs the pillars below met. */
const READINESS: Array<{ from: number; needs: Array<{ pillar: Pillar; min: number }> }> = [
  {
    from: 100,
    needs: [
      { pillar: 'paper_process', min: 7 },
      { pillar: 'economic_buyer', min: 8 },
    ],
  },
  {
    from: 75,
    needs: [
      { pillar: 'economic_buyer', min: 6 },
      { pillar: 'decision_process', min: 5 },
      { pillar: 'paper_process', min: 3 },
    ],
  },
  {
    from: 50,
    needs: [
      { pillar: 'champion', min: 5 },
      { pillar: 'decision_criteria', min: 4 },
      { pillar: 'metrics', min: 5 },
    ],
  },
  { from: 0, needs: [{ pillar: 'identified_pain', min: 4 }] },
];

function stageReadiness(s: DealSnapshot, pillars: Map<Pillar, PillarScore>): StageReadiness {
  const current = s.stage.name;
  if (s.stage.type !== 'open')
    return { current_stage: current, next_stage: null, ready: null, met: [], missing: [] };
  const next = s.stages
    .filter((x) => x.position > s.stage.position && x.type !== 'lost')
    .sort((a, b) => a.position - b.position)[0];
  if (!next) return { current_stage: current, next_stage: null, ready: null, met: [], missing: [] };
  const target = next.probability ?? (next.type === 'won' ? 100 : 0);
  const needs = (READINESS.find((r) => target >= r.from) ?? READINESS[READINESS.length - 1])?.needs ?? [];
  const met: string[] = [];
  const missing: string[] = [];
  for (const need of needs) {
    const got = pillars.get(need.pillar)?.score ?? 0;
    const line = `${PILLAR_LABELS[need.pillar]} at least ${need.min}/${PILLAR_MAX} (now ${got})`;
    (got >= need.min ? met : missing).push(line);
  }
  if (engagedContacts(s).length > 0) met.push('At least one engaged stakeholder');
  else missing.push('At least one engaged stakeholder');
  return { current_stage: current, next_stage: next.name, ready: missing.length === 0, met, missing };
}

const ACTIONS: Record<Pillar, string> = {
  metrics: 'Quantify the business case with the customer (ROI, savings, KPIs) and record it in the notes',
  economic_buyer: 'Get a meeting with the economic buyer and confirm budget and sign-off authority',
  decision_criteria: 'Agree the written decision criteria with the technical buyer',
  decision_process: 'Map the decision process: approvers, steps and a realistic close date',
  paper_process: 'Ask about legal review, procurement and signature steps now, before they delay the close',
  identified_pain: 'Document the business pain in the customer’s words and confirm it with them',
  champion: 'Develop a champion: find an influential contact who wants this to happen and equip them',
  competition: 'Find out who else is being evaluated and plan how to win against them',
};

/**
 * The built-in analysis of an open or closed deal: MEDDPICC pillars from what the data shows, a total
 * score (pillar points as a share of the maximum, minus a penalty for inactivity), its band, the deal's
 * health, risks, strengths, the next actions (weakest pillars first) and readiness for the next stage.
 */
export function analyzeSnapshot(s: DealSnapshot, options: AnalysisOptions): BuiltInAnalysis {
  const pillars = scorePillars(s);
  const byPillar = new Map(pillars.map((p) => [p.pillar, p]));
  const pillarPoints = pillars.reduce((sum, p) => sum + p.score, 0);
  const pillarPercent = (pillarPoints / (PILLARS.length * PILLAR_MAX)) * 100;
  const idle = idleDays(s);
  const stale = options.staleAfterDays;
  const recencyPenalty = idle > 2 * stale ? 20 : idle > stale ? 10 : 0;
  const total = Math.max(0, Math.round((pillarPercent - recencyPenalty) * 10) / 10);
  const band = bandOf(total);
  const close = s.deal.expectedCloseDate;
  const pastClose = close !== null && close.getTime() < s.asOf.getTime();
  const signals = textSignals(s);
  const engagedPeople = engagedContacts(s);
  const engagedCount = engagedPeople.length;
  const overdue = s.stage.type === 'open' ? overdueTasks(s) : [];
  const fromHistory =
    s.stage.type === 'open' ? historyRisks(s, options) : { risks: [] as string[], actions: [] as string[] };

  let health: DealHealth;
  if (s.stage.type === 'won') health = 'won';
  else if (s.stage.type === 'lost') health = 'lost';
  else if (total < 35 || idle > 2 * stale || pastClose) health = 'critical';
  else if (total < 55 || idle > stale) health = 'at_risk';
  else health = 'healthy';

  // Every factor says what this deal has or lacks, true read alone; bad news is only ever a risk.
  const risks: string[] = [];
  const wins: string[] = [];
  const notes = (n: number) => `${n} note${n === 1 ? '' : 's'}`;
  if (s.stage.type === 'open') {
    if (idle > stale) risks.push(`No activity for ${Math.floor(idle)} days (stale after ${stale})`);
    else if (s.activities.length > 1) wins.push(`Active: last activity ${Math.floor(idle)} day(s) ago`);
    if (pastClose && close)
      risks.push(`Expected close date passed ${Math.floor(daysBetween(close, s.asOf))} day(s) ago`);
    if (!close) risks.push('No expected close date');
    risks.push(...fromHistory.risks);
  }
  if (s.contacts.length <= 1)
    risks.push(s.contacts.length === 0 ? 'No stakeholders recorded' : 'Single-threaded: one stakeholder');
  else if (engagedCount === 1)
    risks.push(
      `Single-threaded: ${engagedPeople[0]?.name} is the only engaged one of ${s.contacts.length} stakeholders`,
    );
  else if (engagedCount >= 3)
    wins.push(`Multi-threaded: ${engagedCount} of ${s.contacts.length} stakeholders engaged`);
  for (const c of s.contacts) {
    if (c.role === 'blocker') risks.push(`Blocker involved: ${c.name}${c.title ? ` (${c.title})` : ''}`);
    else if (c.sentiment === 'negative') risks.push(`${c.name} (${c.role.replaceAll('_', ' ')}) is negative`);
  }
  for (const task of overdue.slice(0, 3))
    risks.push(
      `Overdue task: “${task.subject}” was due ${task.dueAt?.toISOString().slice(0, 10)} (${citeLogged(task)})`,
    );
  if (overdue.length > 3) risks.push(`${overdue.length - 3} more overdue tasks`);
  if (signals.competitor > 0)
    risks.push(`Competition mentioned in ${notes(signals.competitor)}: ${quoteOf(s, 'competitor')}`);
  if (signals.negative > 0)
    risks.push(`Concerns or setbacks in ${notes(signals.negative)}: ${quoteOf(s, 'negative')}`);
  if (signals.positive > 0)
    wins.push(`Positive words in ${notes(signals.positive)}: ${quoteOf(s, 'positive')}`);
  if (s.stageMoves.forward > 0) wins.push(`Moved forward ${s.stageMoves.forward} stage(s)`);
  if (s.stageMoves.back > 0) risks.push(`Moved back ${s.stageMoves.back} stage(s)`);
  // Pillars: a strong one names what gave its points, a weak one what it lacks. Competition is neither a
  // strength nor a gap here: a competitor in the notes is already a risk above.
  for (const p of pillars) {
    if (p.pillar === 'competition') continue;
    if (p.score >= 8) wins.push(`${PILLAR_LABELS[p.pillar]} strong (${p.score}/10): ${p.points.join('; ')}`);
    else if (p.score <= 3)
      risks.push(
        `${PILLAR_LABELS[p.pillar]} weak (${p.score}/10): ${(p.lacking.length > 0 ? p.lacking : p.evidence).join('; ')}`,
      );
  }

  // Weakest pillars first; ties in MEDDPICC order. Inactivity comes first when the deal is stale.
  const actions: string[] = [];
  if (s.stage.type === 'open') {
    if (idle > stale) actions.push(`Re-engage now: no activity for ${Math.floor(idle)} days`);
    if (pastClose) actions.push('Confirm a new expected close date with the customer');
    actions.push(...fromHistory.actions);
    if (overdue.length > 0)
      actions.push(
        `Complete or reschedule ${overdue.length} overdue task${overdue.length === 1 ? '' : 's'}, first “${overdue[0]?.subject}”`,
      );
    if (s.contacts.length >= 2 && engagedCount === 1)
      actions.push(`Multi-thread: engage a second stakeholder besides ${engagedPeople[0]?.name}`);
    const weakest = [...pillars].filter((p) => p.score < 7).sort((a, b) => a.score - b.score);
    for (const p of weakest.slice(0, 3)) actions.push(ACTIONS[p.pillar]);
  }

  const readiness = stageReadiness(s, byPillar);
  const strongest = [...pillars].sort((a, b) => b.score - a.score)[0];
  const weakest = [...pillars].sort((a, b) => a.score - b.score)[0];
  const summary =
    `${s.deal.title}${s.deal.companyName ? ` (${s.deal.companyName})` : ''} scores ${total}/100 (${band.replaceAll('_', ' ')}) ` +
    `in ${s.stage.name}; health ${health.replaceAll('_', ' ')}. ` +
    (strongest && weakest
      ? `Strongest: ${PILLAR_LABELS[strongest.pillar]} (${strongest.score}/10); weakest: ${PILLAR_LABELS[weakest.pillar]} (${weakest.score}/10). `
      : '') +
    (s.stage.type === 'open'
      ? `Last activity ${Math.floor(idle)} day(s) ago.`
      : `The deal is ${s.stage.type}.`);

  return {
    total_score: total,
    score_band: band,
    deal_health: health,
    breakdown: {
      pillars: Object.fromEntries(pillars.map((p) => [p.pillar, p.score])),
      pillar_points: pillarPoints,
      pillar_max: PILLARS.length * PILLAR_MAX,
      pillar_percent: Math.round(pillarPercent * 10) / 10,
      recency_penalty: recencyPenalty,
      days_since_activity: Math.floor(idle),
      stakeholders: s.contacts.length,
      engaged_stakeholders: engagedCount,
      activities: s.activities.length,
      logged_activities: s.logged.length,
      overdue_tasks: overdue.length,
      close_date_pushes: s.fieldFacts.pushes.length,
      days_in_stage: s.fieldFacts.stageSince
        ? Math.floor(daysBetween(s.fieldFacts.stageSince, s.asOf))
        : null,
      signals,
    },
    pillar_analyses: pillars.map((p) => ({
      pillar: p.pillar,
      label: PILLAR_LABELS[p.pillar],
      score: p.score,
      max_score: PILLAR_MAX,
      status: p.score >= 7 ? 'strong' : p.score >= 4 ? 'partial' : 'missing',
      evidence: p.evidence,
      gap: p.gap,
    })),
    risk_factors: risks,
    win_factors: wins,
    recommended_actions: actions,
    stage_readiness: readiness,
    summary,
  };
}
