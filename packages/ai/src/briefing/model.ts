import { PUSHES_RISK } from '../analysis/model.ts';
import { type CloseDateMove, citeMove } from '../history.ts';

/** The briefing's inputs: aggregates the database computed over the organization's open deals. */
export interface BriefingDealRow {
  id: string;
  title: string;
  company: string | null;
  value: number | null;
  currency: string | null;
  stage: string | null;
  expected_close_date: Date | null;
  days_idle: number;
  deal_health: string | null;
  negative_stakeholders: number;
  /** Read for the listed deals only (see DealAttention). */
  attention?: DealAttention;
}

/** What the relationship graph says about a deal that needs attention. */
export interface DealAttention {
  /** The one engaged contact's name when the deal has exactly one (single-threaded), else null. */
  single_threaded_with: string | null;
  /** Open tasks linked to the deal whose due date has passed, and the oldest of them. */
  overdue_tasks: number;
  oldest_overdue: OverdueTask | null;
  /** The close date's pushes (field history), the last one cited; absent when not read. */
  close_date_pushes?: { count: number; last: CloseDateMove | null };
}

export interface OverdueTask {
  id: string;
  subject: string;
  due_at: Date;
  /** The first deal the task is linked to (null when none). */
  deal_title?: string | null;
}

/** The organization's open tasks past their due date: counted up to a bound, the oldest named. */
export interface OverdueTasks {
  count: number;
  /** More than `count` (the count stopped at its bound). */
  more: boolean;
  oldest: OverdueTask[];
}

export interface BriefingFacts {
  now: Date;
  staleAfterDays: number;
  summary: { total_pipeline_value: number; active_deals: number; at_risk_deals: number };
  closingThisWeek: BriefingDealRow[];
  stale: BriefingDealRow[];
  atRisk: BriefingDealRow[];
  signals: { positive: number; negative: number; competitor_mentions: number };
  overdueTasks?: OverdueTasks;
}

export const BRIEFING_LIST_LIMIT = 10;
export const CLOSING_WITHIN_DAYS = 7;

const day = (d: Date) => d.toISOString().slice(0, 10);
const daysUntil = (d: Date, now: Date) => Math.ceil((d.getTime() - now.getTime()) / 86_400_000);

const base = (row: BriefingDealRow) => ({
  id: row.id,
  title: row.title,
  company: row.company,
  value: row.value,
  currency: row.currency,
  stage: row.stage,
});

/** Why an open deal is at risk: each condition that holds, with its numbers. */
export function riskReasons(row: BriefingDealRow, now: Date, staleAfterDays: number): string[] {
  const reasons: string[] = [];
  if (row.expected_close_date && row.expected_close_date.getTime() < now.getTime())
    reasons.push(`expected close date ${day(row.expected_close_date)} has passed`);
  if (row.days_idle > 2 * staleAfterDays) reasons.push(`no activity for ${row.days_idle} days`);
  if (row.deal_health === 'at_risk' || row.deal_health === 'critical')
    reasons.push(`last analysis rated its health ${row.deal_health.replace('_', ' ')}`);
  if (row.negative_stakeholders > 0)
    reasons.push(`${row.negative_stakeholders} negative or blocking stakeholder(s)`);
  return reasons;
}

const tasks = (n: number, more = false) =>
  `${more ? 'more than ' : ''}${n.toLocaleString('en-US')} overdue task${n === 1 && !more ? '' : 's'}`;

/** How a task is named: its subject, due date and id (and its deal, when known). */
export const taskNamed = (t: OverdueTask) =>
  `“${t.subject}”${t.deal_title ? ` on ${t.deal_title}` : ''} due ${day(t.due_at)} (task ${t.id})`;

/** Why the graph and the field history say a listed deal needs attention: single-threaded, overdue tasks, a slipping close date. */
export function attentionReasons(row: BriefingDealRow): string[] {
  const a = row.attention;
  if (!a) return [];
  const reasons: string[] = [];
  if (a.single_threaded_with)
    reasons.push(`single-threaded: ${a.single_threaded_with} is the only engaged contact`);
  if (a.overdue_tasks > 0 && a.oldest_overdue)
    reasons.push(
      `${tasks(a.overdue_tasks)}, the oldest ${taskNamed({ ...a.oldest_overdue, deal_title: null })}`,
    );
  const pushes = a.close_date_pushes;
  if (pushes && pushes.count >= PUSHES_RISK && pushes.last)
    reasons.push(`close date pushed ${pushes.count} times, last ${citeMove(pushes.last)}`);
  return reasons;
}

const withAttention = (reason: string, row: BriefingDealRow) => [reason, ...attentionReasons(row)].join('; ');

export interface BuiltInBriefing {
  headline: string;
  greeting: string;
  closing_this_week: Array<Record<string, unknown>>;
  stale_deals: Array<Record<string, unknown>>;
  at_risk_deals: Array<Record<string, unknown>>;
}

/** The built-in briefing: each listed deal with the reason it is listed, and a greeting with the headline. */
export function buildBriefing(f: BriefingFacts): BuiltInBriefing {
  const money = Math.round(f.summary.total_pipeline_value).toLocaleString('en-US');
  const deals = (n: number) => `${n} ${n === 1 ? 'deal' : 'deals'}`;
  const listed = new Map(
    [...f.closingThisWeek, ...f.stale, ...f.atRisk].map((row) => [row.id, row] as const),
  );
  const single = [...listed.values()].filter((row) => row.attention?.single_threaded_with);
  const overdue = f.overdueTasks;
  const headline =
    `${deals(f.summary.active_deals)} active, worth ${money} in the pipeline; ` +
    `${f.closingThisWeek.length} closing within ${CLOSING_WITHIN_DAYS} days, ${f.stale.length} stale, ` +
    `${f.summary.at_risk_deals} at risk` +
    (single.length > 0 ? `; ${single.length} of the listed deals single-threaded` : '') +
    (overdue && overdue.count > 0 ? `; ${tasks(overdue.count, overdue.more)}` : '');
  const weekday = f.now.toLocaleDateString('en-US', { weekday: 'long', timeZone: 'UTC' });
  const named: string[] = [];
  if (single.length > 0)
    named.push(
      `Single-threaded: ${single
        .slice(0, 5)
        .map((row) => `${row.title} (only ${row.attention?.single_threaded_with})`)
        .join(', ')}${single.length > 5 ? ` and ${single.length - 5} more` : ''}.`,
    );
  if (overdue && overdue.oldest.length > 0)
    named.push(`Oldest overdue: ${overdue.oldest.map(taskNamed).join('; ')}.`);
  return {
    headline,
    greeting: [`Good day! Your briefing for ${weekday}, ${day(f.now)}: ${headline}.`, ...named].join(' '),
    closing_this_week: f.closingThisWeek.map((row) => {
      const close = row.expected_close_date as Date;
      const inDays = daysUntil(close, f.now);
      return {
        ...base(row),
        expected_close_date: close.toISOString(),
        days_to_close: inDays,
        reason: withAttention(
          `expected to close ${inDays <= 0 ? 'today' : `in ${inDays} day(s)`} (${day(close)})`,
          row,
        ),
      };
    }),
    stale_deals: f.stale.map((row) => ({
      ...base(row),
      days_idle: row.days_idle,
      reason: withAttention(`no activity for ${row.days_idle} days (stale after ${f.staleAfterDays})`, row),
    })),
    at_risk_deals: f.atRisk.map((row) => ({
      ...base(row),
      deal_health: row.deal_health,
      reason: withAttention(riskReasons(row, f.now, f.staleAfterDays).join('; '), row),
    })),
  };
}
