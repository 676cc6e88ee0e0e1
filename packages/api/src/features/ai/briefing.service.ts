import {
  BRIEFING_LIST_LIMIT,
  type BriefingDealRow,
  type BriefingFacts,
  type BriefingResult,
  CLOSING_WITHIN_DAYS,
} from '@crm/ai';
import type { EntityManager, Tables } from '@crm/db';
import { type Expression, expressionBuilder, type OrderByModifiers, type SqlBool, sql } from 'kysely';
import { jsonBuildObject } from 'kysely/helpers/postgres';
import type { AuthedContext } from '../../context.ts';
import { orgQuery } from '../../org-scope.ts';
import { asJson } from '../../read-model.ts';
import {
  ACTIVE_AT,
  CLOCK,
  type ClockCte,
  clock,
  KEPT_TOTALS,
  type StagesCte,
  since,
  stagesOfType,
} from '../pipeline/open-pipeline.sql.ts';
import { overdueTasks, withAttention } from './attention.queries.ts';
import { asDateOrNull } from './rows.ts';
import { aiRuntime } from './runtime.ts';

/** Signals are counted over this many past days. */
export const SIGNAL_DAYS = 7;

type ListRow = Omit<BriefingDealRow, 'expected_close_date' | 'value'> & {
  expected_close_date: unknown;
  value: unknown;
};

/** The statement's tables: the organization's, its open stages (`stages`) and its clock (`t`). */
const q = expressionBuilder<Tables & StagesCte & ClockCte, never>();
const ref = (column: string) => sql.ref(column);

/**
 * A deal is at risk (in `d`, with the statement's clock `t`): see pipelineFacts. Its negative or blocking
 * stakeholders are counted by the database as contacts are written (`negative_stakeholders`).
 */
const AT_RISK = sql<SqlBool>`(coalesce(${ref('d.expected_close_date')} < ${clock('now')}, false) or ${ACTIVE_AT} < ${clock('risk_before')}
   or coalesce(${ref('d.deal_health')} in ('at_risk', 'critical'), false)
   or ${ref('d.negative_stakeholders')} > 0)`;

/** One item of an ORDER BY: what, and in which direction (ascending when not said). */
type Order = ReadonlyArray<{ by: Expression<unknown>; desc?: true; nullsLast?: true }>;
const direction = (o: Order[number]): OrderByModifiers | undefined =>
  o.nullsLast ? (ob) => (o.desc ? ob.desc() : ob).nullsLast() : o.desc ? 'desc' : undefined;

/**
 * One of the briefing's lists: per open stage, the first BRIEFING_LIST_LIMIT deals in `index` order among
 * those matching `where`, read down the stage's index in that order; then the first of those over all
 * stages (in `items` order, the same over the list's columns), as a JSON array.
 */
const list = (where: Expression<SqlBool>, index: Order, items: Order) => {
  let perStage = q
    .selectFrom('stages as s')
    .crossJoinLateral((eb) => {
      let deals = eb
        .selectFrom('deals as d')
        .select([
          'd.id',
          'd.title',
          'd.company_name',
          'd.value',
          'd.currency',
          's.name as stage',
          'd.expected_close_date',
          'd.deal_health',
          sql<number>`extract(epoch from now() - ${ACTIVE_AT}) / 86400`.as('idle_days'),
          'd.negative_stakeholders',
        ])
        .whereRef('d.stage_id', '=', 's.id')
        .where(where);
      for (const o of index) deals = deals.orderBy(o.by, direction(o));
      return deals.limit(sql.lit(BRIEFING_LIST_LIMIT)).as('x');
    })
    .selectAll('x');
  for (const o of items) perStage = perStage.orderBy(o.by, direction(o));
  return q.selectFrom(perStage.limit(sql.lit(BRIEFING_LIST_LIMIT)).as('y')).select((eb) => {
    let agg = eb.fn.jsonAgg(
      jsonBuildObject({
        id: eb.ref('id'),
        title: eb.ref('title'),
        company: eb.ref('company_name'),
        value: eb.ref('value'),
        currency: eb.ref('currency'),
        stage: eb.ref('stage'),
        expected_close_date: eb.ref('expected_close_date'),
        days_idle: sql<number>`floor(${eb.ref('idle_days')})::int`,
        deal_health: eb.ref('deal_health'),
        negative_stakeholders: eb.ref('negative_stakeholders'),
      }),
    );
    for (const o of items) agg = agg.orderBy(o.by, direction(o));
    return sql<ListRow[]>`coalesce(${agg}, '[]'::json)`.as('list');
  });
};

/** The three lists (see pipelineFactsQuery), in the statement's CTEs `stages` and `t`. */
const LISTS = () => [
  list(
    sql<SqlBool>`${ref('d.expected_close_date')} >= ${clock('now')} and ${ref('d.expected_close_date')} < ${clock('closing_before')}`,
    [{ by: ref('d.expected_close_date') }, { by: ref('d.id') }],
    [{ by: ref('expected_close_date') }, { by: ref('id') }],
  ).as('closing'),
  list(
    sql<SqlBool>`${ACTIVE_AT} < ${clock('stale_before')}`,
    [{ by: ACTIVE_AT }, { by: ref('d.id') }],
    [{ by: ref('idle_days'), desc: true }, { by: ref('id') }],
  ).as('stale'),
  list(
    AT_RISK,
    [{ by: ref('d.value'), desc: true, nullsLast: true }, { by: ref('d.id') }],
    [{ by: ref('value'), desc: true, nullsLast: true }, { by: ref('id') }],
  ).as('risky'),
];

/**
 * The open pipeline in one statement: totals, and the three lists ordered and cut in SQL. A deal is at
 * risk when its close date has passed, it has been idle for more than twice the stale threshold, its last
 * analysis rated it at_risk or critical, or a stakeholder is negative or a blocker.
 *
 * Nothing here reads every open deal (docs/api/analytics.md: Analytics at scale): the count and value are kept per
 * stage; a deal that is not at risk was active within twice the threshold, so the at-risk count is the
 * open count minus those among the recently active that are not at risk; each list walks its own index
 * per open stage (close date from today, oldest activity, highest value) and stops at its length.
 * `stale` is the stale threshold in days, `risk` twice it.
 */
const pipelineFactsQuery = orgQuery((db, a: { stale: number; risk: number }) =>
  db
    .with('stages', () => stagesOfType('open'))
    .with('kept', () => KEPT_TOTALS)
    .with('t', (qc) => CLOCK(qc, { stale: a.stale, risk: a.risk, closing: sql.lit(CLOSING_WITHIN_DAYS) }))
    .selectFrom('kept')
    .select((eb) => [
      'kept.value as total_value',
      'kept.deals as active',
      eb(
        'kept.deals',
        '-',
        eb
          .selectFrom('stages as s')
          .innerJoin('deals as d', 'd.stage_id', 's.id')
          .select(sql<string>`count(*)`.as('n'))
          .where(sql<SqlBool>`${ACTIVE_AT} >= ${since(a.risk)} and not ${AT_RISK}`),
      ).as('at_risk'),
      ...LISTS(),
    ]),
);

/** The briefing's three lists alone (what coaching names single-threaded deals from): no totals to count. */
const listsQuery = orgQuery((db, a: { stale: number; risk: number }) =>
  db
    .with('stages', () => stagesOfType('open'))
    .with('t', (qc) => CLOCK(qc, { stale: a.stale, risk: a.risk, closing: sql.lit(CLOSING_WITHIN_DAYS) }))
    .selectNoFrom(() => LISTS()),
);

const listRows = (v: unknown): BriefingDealRow[] =>
  asJson<ListRow[]>(v ?? '[]').map((r) => ({
    ...r,
    value: r.value == null ? null : Number(r.value),
    expected_close_date: asDateOrNull(r.expected_close_date),
  }));

/** The three lists, each listed deal with what the graph says of it (attention.queries.ts). */
async function listsOf(
  em: EntityManager,
  row: { closing?: unknown; stale?: unknown; risky?: unknown } | undefined,
) {
  const lists = {
    closingThisWeek: listRows(row?.closing),
    stale: listRows(row?.stale),
    atRisk: listRows(row?.risky),
  };
  await withAttention(em, [...lists.closingThisWeek, ...lists.stale, ...lists.atRisk]);
  return lists;
}

/** The open pipeline's totals and lists. */
async function pipelineFacts(em: EntityManager, staleDays: number) {
  const [row] = await pipelineFactsQuery(em, { stale: staleDays, risk: 2 * staleDays });
  return {
    summary: {
      total_pipeline_value: Number(row?.total_value ?? 0),
      active_deals: Number(row?.active ?? 0),
      at_risk_deals: Number(row?.at_risk ?? 0),
    },
    ...(await listsOf(em, row)),
  };
}

/** The deals the briefing lists (closing this week, stale, at risk), with their attention facts. */
export async function listedDeals(em: EntityManager, staleDays: number) {
  const [row] = await listsQuery(em, { stale: staleDays, risk: 2 * staleDays });
  return listsOf(em, row);
}

// The bounds of the partial hour are written out (not taken from a CTE) so that the planner reads it down
// the (org_id, created_at) indexes: it took a join filter for a scan of every deal.
const SINCE = sql<Date>`(now() - make_interval(hours => ${sql.lit(SIGNAL_DAYS * 24)}))`;
const WHOLE_FROM = sql<Date>`crm_signal_hour(${SINCE}) + interval '1 hour'`;

/** The activities and deal creations of the partial hour with their signals, as CTE `partial` reads them. */
const partial = expressionBuilder<{ partial: { s: number } }, never>();
/** How many of the partial hour's rows carry the signal `bit`. */
const partialCount = (bit: number) =>
  partial.selectFrom('partial').select(sql<string>`count(*) filter (where s & ${sql.lit(bit)} <> 0)`.as('n'));

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
const signalCounts = orgQuery((db) =>
  db
    .with('partial', (qc) =>
      qc
        .selectFrom('activities as a')
        .select('a.signals as s')
        .where('a.created_at', '>', SINCE)
        .where('a.created_at', '<', WHOLE_FROM)
        .where('a.signals', '<>', sql.lit(0))
        .unionAll(
          qc
            .selectFrom('deals as d')
            .select('d.creation_signals as s')
            .where('d.created_at', '>', SINCE)
            .where('d.created_at', '<', WHOLE_FROM)
            .where('d.creation_signals', '<>', sql.lit(0)),
        ),
    )
    .selectFrom('activity_signal_hours as h')
    .select([
      sql<string>`coalesce(sum(${ref('h.positive')}), 0) + ${partialCount(1)}`.as('positive'),
      sql<string>`coalesce(sum(${ref('h.negative')}), 0) + ${partialCount(2)}`.as('negative'),
      sql<string>`coalesce(sum(${ref('h.competitor')}), 0) + ${partialCount(4)}`.as('competitor'),
    ])
    .where('h.hour', '>=', WHOLE_FROM),
);

async function signalFacts(em: EntityManager): Promise<BriefingFacts['signals']> {
  const [row] = await signalCounts(em, {});
  return {
    positive: Number(row?.positive ?? 0),
    negative: Number(row?.negative ?? 0),
    competitor_mentions: Number(row?.competitor ?? 0),
  };
}

/** GET /briefing. */
export async function dailyBriefing(ctx: AuthedContext): Promise<BriefingResult> {
  const staleAfterDays = ctx.services.config.staleThresholdDays;
  const [pipeline, signals, overdue] = await Promise.all([
    pipelineFacts(ctx.em, staleAfterDays),
    signalFacts(ctx.em),
    overdueTasks(ctx.em),
  ]);
  const { result } = await aiRuntime(ctx.services).briefing.invoke({
    now: new Date(),
    staleAfterDays,
    ...pipeline,
    signals,
    overdueTasks: overdue,
  });
  return result;
}
