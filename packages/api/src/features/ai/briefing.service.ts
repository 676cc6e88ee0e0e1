import {
  BRIEFING_LIST_LIMIT,
  type BriefingDealRow,
  type BriefingFacts,
  type BriefingResult,
  CLOSING_WITHIN_DAYS,
} from '@crm/ai';
import type { EntityManager } from '@crm/db';
import type { AuthedContext } from '../../context.ts';
import { currentOrg } from '../../org-scope.ts';
import { asJson, orgRows } from '../../read-model.ts';
import { ACTIVE_AT, CLOCK, clock, KEPT_TOTALS, stagesOfType } from '../pipeline/open-pipeline.sql.ts';
import { asDateOrNull } from './rows.ts';
import { aiRuntime } from './runtime.ts';

/** Signals are counted over this many past days. */
export const SIGNAL_DAYS = 7;

type ListRow = Omit<BriefingDealRow, 'expected_close_date' | 'value'> & {
  expected_close_date: unknown;
  value: unknown;
};

const ITEM = `json_build_object('id', id, 'title', title, 'company', company_name, 'value', value,
  'currency', currency, 'stage', stage, 'expected_close_date', expected_close_date,
  'days_idle', floor(idle_days)::int, 'deal_health', deal_health, 'negative_stakeholders', negative_stakeholders)`;

/**
 * A deal is at risk (in `d`, with the statement's clock `t`): see pipelineFacts. Its negative or blocking
 * stakeholders are counted by the database as contacts are written (`negative_stakeholders`).
 */
const AT_RISK = `(coalesce(d.expected_close_date < ${clock('now')}, false) or ${ACTIVE_AT} < ${clock('risk_before')}
   or coalesce(d.deal_health in ('at_risk', 'critical'), false)
   or d.negative_stakeholders > 0)`;

/**
 * One of the briefing's lists: per open stage, the first BRIEFING_LIST_LIMIT deals in `order` among those
 * matching `where`, read down the stage's index in that order; then the first of those over all stages.
 * Parameters: the organization, then those of `where`.
 */
const list = (where: string, order: { index: string; items: string }) =>
  `(select coalesce(json_agg(${ITEM} order by ${order.items}), '[]'::json) from (
      select x.* from stages s cross join lateral (
        select d.id, d.title, d.company_name, d.value, d.currency, s.name as stage, d.expected_close_date, d.deal_health,
               extract(epoch from now() - ${ACTIVE_AT}) / 86400 as idle_days,
               d.negative_stakeholders
          from deals d where d.org_id = ? and d.stage_id = s.id and ${where}
         order by ${order.index} limit ${BRIEFING_LIST_LIMIT}) x
      order by ${order.items} limit ${BRIEFING_LIST_LIMIT}) y)`;

/**
 * The open pipeline in one statement: totals, and the three lists ordered and cut in SQL. A deal is at
 * risk when its close date has passed, it has been idle for more than twice the stale threshold, its last
 * analysis rated it at_risk or critical, or a stakeholder is negative or a blocker.
 *
 * Nothing here reads every open deal (README: Analytics at scale): the count and value are kept per
 * stage; a deal that is not at risk was active within twice the threshold, so the at-risk count is the
 * open count minus those among the recently active that are not at risk; each list walks its own index
 * per open stage (close date from today, oldest activity, highest value) and stops at its length.
 */
async function pipelineFacts(em: EntityManager, staleDays: number) {
  const org = currentOrg(em);
  const [row] = await orgRows<Record<string, unknown>>(
    em,
    `with stages as (${stagesOfType('open')}),
     kept as (${KEPT_TOTALS}),
     t as (${CLOCK})
     select kept.value as total_value, kept.deals as active,
            kept.deals - (select count(*) from stages s join deals d on d.org_id = ? and d.stage_id = s.id
                           where ${ACTIVE_AT} >= ${clock('risk_before')} and not ${AT_RISK}) as at_risk,
            ${list(
              `d.expected_close_date >= ${clock('now')} and d.expected_close_date < ${clock('closing_before')}`,
              {
                index: 'd.expected_close_date, d.id',
                items: 'expected_close_date, id',
              },
            )} as closing,
            ${list(`${ACTIVE_AT} < ${clock('stale_before')}`, {
              index: `${ACTIVE_AT}, d.id`,
              items: 'idle_days desc, id',
            })} as stale,
            ${list(AT_RISK, { index: 'd.value desc nulls last, d.id', items: 'value desc nulls last, id' })} as risky
       from kept`,
    [org, staleDays, 2 * staleDays, CLOSING_WITHIN_DAYS, org, org, org, org],
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
 * Last week's signals, one count per activity (a new deal's notes count with its creation): positive when a
 * stakeholder turned positive, a deal was won, or a person's text reads positive; negative when a
 * stakeholder turned negative or into a blocker, a deal was lost, or the text reads negative; a competitor
 * mention when the text names competition.
 *
 * The database classifies each activity and each deal's creation as it is written and counts them per hour
 * (Migration20261129000000_analytics_aggregates): the whole hours of the 7 × 24 are summed, and the stored
 * classifications of the one partial hour at the window's start are added. The cost is the same at any size.
 */
async function signalFacts(em: EntityManager): Promise<BriefingFacts['signals']> {
  const org = currentOrg(em);
  // The bounds are written out (not taken from a CTE) so that the planner reads the partial hour down the
  // (org_id, created_at) indexes: it took a join filter for a scan of every deal.
  const since = `(now() - make_interval(hours => ${SIGNAL_DAYS * 24}))`;
  const wholeFrom = `crm_signal_hour(${since}) + interval '1 hour'`;
  const [row] = await orgRows<Record<string, unknown>>(
    em,
    `with partial as (
       select a.signals as s from activities a
        where a.org_id = ? and a.created_at > ${since} and a.created_at < ${wholeFrom} and a.signals <> 0
       union all
       select d.creation_signals from deals d
        where d.org_id = ? and d.created_at > ${since} and d.created_at < ${wholeFrom} and d.creation_signals <> 0
     )
     select coalesce(sum(h.positive), 0) + (select count(*) filter (where s & 1 <> 0) from partial) as positive,
            coalesce(sum(h.negative), 0) + (select count(*) filter (where s & 2 <> 0) from partial) as negative,
            coalesce(sum(h.competitor), 0) + (select count(*) filter (where s & 4 <> 0) from partial) as competitor
       from activity_signal_hours h where h.org_id = ? and h.hour >= ${wholeFrom}`,
    [org, org],
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
