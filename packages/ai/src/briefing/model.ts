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
}

export interface BriefingFacts {
  now: Date;
  staleAfterDays: number;
  summary: { total_pipeline_value: number; active_deals: number; at_risk_deals: number };
  closingThisWeek: BriefingDealRow[];
  stale: BriefingDealRow[];
  atRisk: BriefingDealRow[];
  signals: { positive: number; negative: number; competitor_mentions: number };
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
  const headline =
    `${deals(f.summary.active_deals)} active, worth ${money} in the pipeline; ` +
    `${f.closingThisWeek.length} closing within ${CLOSING_WITHIN_DAYS} days, ${f.stale.length} stale, ` +
    `${f.summary.at_risk_deals} at risk`;
  const weekday = f.now.toLocaleDateString('en-US', { weekday: 'long', timeZone: 'UTC' });
  return {
    headline,
    greeting: `Good day! Your briefing for ${weekday}, ${day(f.now)}: ${headline}.`,
    closing_this_week: f.closingThisWeek.map((row) => {
      const close = row.expected_close_date as Date;
      const inDays = daysUntil(close, f.now);
      return {
        ...base(row),
        expected_close_date: close.toISOString(),
        days_to_close: inDays,
        reason: `expected to close ${inDays <= 0 ? 'today' : `in ${inDays} day(s)`} (${day(close)})`,
      };
    }),
    stale_deals: f.stale.map((row) => ({
      ...base(row),
      days_idle: row.days_idle,
      reason: `no activity for ${row.days_idle} days (stale after ${f.staleAfterDays})`,
    })),
    at_risk_deals: f.atRisk.map((row) => ({
      ...base(row),
      deal_health: row.deal_health,
      reason: riskReasons(row, f.now, f.staleAfterDays).join('; '),
    })),
  };
}
