import {
  BRIEFING_LIST_LIMIT,
  type BriefingDealRow,
  type BriefingFacts,
  type BriefingResult,
  CLOSING_WITHIN_DAYS,
  signalRegexSql,
} from '@crm/ai';
import type { EntityManager } from '@crm/db';
import type { AuthedContext } from '../../context.ts';
import { currentOrg, orgRows } from '../../read-model.ts';
import { activityTextSql } from './activity-text.sql.ts';
import { asDateOrNull, asJson } from './rows.ts';
import { aiRuntime } from './runtime.ts';

/** Signals are counted over this many past days. */
export const SIGNAL_DAYS = 7;

/** The notes a deal was created with: the first notes change's old value, else its notes now. */
const CREATION_NOTES = `coalesce((select coalesce(n.changes->'notes'->>'from', '') from activities n
   where n.deal_id = a.deal_id and n.type = 'deal_updated' and n.changes->'notes' is not null
   order by n.created_at limit 1), d.notes)`;

type ListRow = Omit<BriefingDealRow, 'expected_close_date' | 'value'> & {
  expected_close_date: unknown;
  value: unknown;
};

const ITEM = `json_build_object('id', id, 'title', title, 'company', company_name, 'value', value,
  'currency', currency, 'stage', stage, 'expected_close_date', expected_close_date,
  'days_idle', floor(idle_days)::int, 'deal_health', deal_health, 'negative_stakeholders', negative_stakeholders)`;
const list = (where: string, order: string) =>
  `(select coalesce(json_agg(${ITEM} order by ${order}), '[]'::json)
      from (select * from flagged where ${where} order by ${order} limit ${BRIEFING_LIST_LIMIT}) x)`;

/**
 * The open pipeline in one statement: totals, and the three lists ordered and cut in SQL. A deal is at
 * risk when its close date has passed, it has been idle for more than twice the stale threshold, its last
 * analysis rated it at_risk or critical, or a stakeholder is negative or a blocker.
 */
async function pipelineFacts(em: EntityManager, staleDays: number) {
  const [row] = await orgRows<Record<string, unknown>>(
    em,
    `with open_deals as (
       select d.id, d.title, d.company_name, d.value, d.currency, s.name as stage, d.expected_close_date,
              d.deal_health, extract(epoch from now() - coalesce(d.last_activity_at, d.created_at)) / 86400 as idle_days
         from deals d join pipeline_stages s on s.id = d.stage_id
        where d.org_id = ? and s.stage_type = 'open'
     ), negatives as (
       select c.deal_id, count(*)::int as n from contacts c
        where c.org_id = ? and (c.sentiment = 'negative' or c.role_type = 'blocker')
        group by c.deal_id
     ), flagged as (
       select o.*, coalesce(n.n, 0) as negative_stakeholders,
              (coalesce(o.expected_close_date < now(), false) or o.idle_days > ?
               or coalesce(o.deal_health in ('at_risk', 'critical'), false) or coalesce(n.n, 0) > 0) as at_risk
         from open_deals o left join negatives n on n.deal_id = o.id
     )
     select (select coalesce(sum(value), 0) from flagged) as total_value,
            (select count(*) from flagged) as active,
            (select count(*) from flagged where at_risk) as at_risk,
            ${list(`expected_close_date >= now() and expected_close_date < now() + make_interval(days => ${CLOSING_WITHIN_DAYS})`, 'expected_close_date, id')} as closing,
            ${list(`idle_days > ${staleDays}`, 'idle_days desc, id')} as stale,
            ${list('at_risk', 'value desc nulls last, id')} as risky`,
    [currentOrg(em), 2 * staleDays],
  );
  const rows = (v: unknown): BriefingDealRow[] =>
    asJson<ListRow[]>(v ?? '[]').map((r) => ({
      ...r,
      value: r.value == null ? null : Number(r.value),
      expected_close_date: asDateOrNull(r.expected_close_date),
    }));
  return {
    summary: {
      total_pipeline_value: Number(row?.total_value ?? 0),
      active_deals: Number(row?.active ?? 0),
      at_risk_deals: Number(row?.at_risk ?? 0),
    },
    closingThisWeek: rows(row?.closing),
    stale: rows(row?.stale),
    atRisk: rows(row?.risky),
  };
}

/**
 * Last week's signals, one count per activity (a new deal's notes count with its creation): positive when a stakeholder turned positive, a deal was won,
 * or a person's text reads positive; negative when a stakeholder turned negative or into a blocker, a deal
 * was lost, or the text reads negative; a competitor mention when the text names competition.
 */
async function signalFacts(em: EntityManager): Promise<BriefingFacts['signals']> {
  const [row] = await orgRows<Record<string, unknown>>(
    em,
    `with recent as (
       select a.type, a.changes, ${activityTextSql(CREATION_NOTES)} as text
         from activities a join deals d on d.id = a.deal_id
        where a.org_id = ? and a.created_at > now() - make_interval(days => ${SIGNAL_DAYS})
     ), closed_stages as (
       select name, stage_type from pipeline_stages where org_id = ? and stage_type <> 'open'
     )
     select count(*) filter (where
              (type = 'contact_updated' and changes->'sentiment'->>'to' = 'positive')
              or (type = 'stage_changed' and changes->'stage'->>'to' in (select name from closed_stages where stage_type = 'won'))
              or text ~* ?) as positive,
            count(*) filter (where
              (type = 'contact_updated' and (changes->'sentiment'->>'to' = 'negative' or changes->'role_type'->>'to' = 'blocker'))
              or (type = 'stage_changed' and changes->'stage'->>'to' in (select name from closed_stages where stage_type = 'lost'))
              or text ~* ?) as negative,
            count(*) filter (where text ~* ?) as competitor
       from recent`,
    [currentOrg(em), signalRegexSql('positive'), signalRegexSql('negative'), signalRegexSql('competitor')],
  );
  return {
    positive: Number(row?.positive ?? 0),
    negative: Number(row?.negative ?? 0),
    competitor_mentions: Number(row?.competitor ?? 0),
  };
}

/** GET /briefing. */
export async function dailyBriefing(ctx: AuthedContext): Promise<BriefingResult> {
  const staleAfterDays = ctx.services.config.staleThresholdDays;
  const [pipeline, signals] = await Promise.all([pipelineFacts(ctx.em, staleAfterDays), signalFacts(ctx.em)]);
  const { result } = await aiRuntime(ctx.services).briefing.invoke({
    now: new Date(),
    staleAfterDays,
    ...pipeline,
    signals,
  });
  return result;
}
