import type { EntityManager, Tables } from '@crm/db';
import { type ExpressionBuilder, type SqlBool, sql } from 'kysely';
import { jsonBuildObject } from 'kysely/helpers/postgres';
import type { z } from 'zod';
import { orgQuery } from '../../org-scope.ts';
import type { KeptNarrowing } from '../../query/list.ts';
import { afterAnchor, asJson, checkCursor, isoOf, numberOrNull, storedText } from '../../read-model.ts';
import { toIso } from '../../schemas.ts';
import { storedJson } from '../../stored-json.ts';
import type { StageRow } from '../pipeline/stages.service.ts';
import type { Activity, DealDto, DealListQuery, Stakeholder } from './deal.schemas.ts';
import { stakeholdersOf } from './stakeholders.service.ts';

/**
 * A deal's columns as the API answers them, its stage and pipeline joined (as `d`, `s`, `p`); from the
 * query's own builder, or a subquery's (whose tables the scope reaches through the outer query). A list's
 * (`listed`) has its custom values as their stored text (`StoredJson`).
 */
export const dealRows = (db: Pick<ExpressionBuilder<Tables, never>, 'selectFrom'>, listed = false) =>
  db
    .selectFrom('deals as d')
    .leftJoin('pipeline_stages as s', 's.id', 'd.stage_id')
    .leftJoin('pipelines as p', 'p.id', 'd.pipeline_id')
    .select([
      'd.id',
      'd.title',
      'd.company_name',
      'd.company_id',
      'd.value',
      'd.currency',
      'd.win_probability',
      'd.deal_health',
      'd.lifecycle_stage',
      'd.stage_id',
      's.name as stage_name',
      's.stage_type',
      'd.pipeline_id',
      'p.name as pipeline_name',
      'd.owner_name',
      'd.contact_name',
      'd.contact_email',
      'd.contact_phone',
      'd.notes',
      'd.lead_source',
      isoOf('d.expected_close_date').as('expected_close_date'),
      isoOf('d.last_activity_at').as('last_activity_at'),
      isoOf('d.created_at').as('created_at'),
      isoOf('d.updated_at').as('updated_at'),
      listed ? storedText('d.custom').as('custom') : 'd.custom',
    ]);

export type DealRow = Omit<DealDto, 'value'> & { value: string | number | null };

/**
 * The one mapping from stored deal to API Deal: the Deal's fields by name, so a row's other columns (a
 * list's total, a detail's stakeholders) stay behind without a rest copy per row (a page's largest
 * allocation, measured with the sampling heap profiler).
 */
export function toDealDto(row: DealRow): DealDto {
  return {
    id: row.id,
    title: row.title,
    company_name: row.company_name,
    company_id: row.company_id,
    value: numberOrNull(row.value),
    currency: row.currency,
    win_probability: row.win_probability,
    deal_health: row.deal_health,
    lifecycle_stage: row.lifecycle_stage,
    stage_id: row.stage_id,
    stage_name: row.stage_name,
    stage_type: row.stage_type,
    pipeline_id: row.pipeline_id,
    pipeline_name: row.pipeline_name,
    owner_name: row.owner_name,
    contact_name: row.contact_name,
    contact_email: row.contact_email,
    contact_phone: row.contact_phone,
    notes: row.notes,
    lead_source: row.lead_source,
    expected_close_date: row.expected_close_date,
    last_activity_at: row.last_activity_at,
    created_at: row.created_at,
    updated_at: row.updated_at,
    custom: storedJson(row.custom),
  };
}

/**
 * The same, from the row a create inserts and its stage: a create answers without reading back what it
 * wrote. Timestamps are the row's own (millisecond) values, as stored; what a create does not set is null.
 */
export function dealDtoOf(deal: CreatedDeal, stage: StageRow): DealDto {
  return toDealDto({
    ...deal,
    win_probability: null,
    deal_health: null,
    stage_name: stage.name,
    stage_type: stage.stage_type,
    pipeline_name: stage.pipeline_name,
    owner_name: null,
    contact_phone: null,
    expected_close_date: toIso(deal.expected_close_date),
    last_activity_at: deal.last_activity_at.toISOString(),
    created_at: deal.created_at.toISOString(),
    updated_at: null,
  });
}

/** The stored columns of a deal as created, that its answer reads. */
type CreatedDeal = Pick<
  DealDto,
  'id' | 'title' | 'company_name' | 'company_id' | 'currency' | 'lifecycle_stage' | 'stage_id' | 'pipeline_id'
> &
  Pick<DealDto, 'contact_name' | 'contact_email' | 'notes' | 'lead_source' | 'custom'> & {
    value: number | null;
    expected_close_date: Date | null;
    last_activity_at: Date;
    created_at: Date;
  };

/**
 * A page of deals and the kept total in one statement (a round trip less): the total's row is there even
 * when the page is empty, the page's rows hang off it in their index order.
 */
const dealPage = orgQuery(
  (
    db,
    a: {
      lifecycle_stage?: string;
      pipeline_id?: string;
      after?: string;
      limit: number;
      offset: number;
    },
  ) =>
    db
      .selectFrom((eb) => {
        let counted = eb.selectFrom('deal_counts').select(sql<string>`coalesce(sum(n), 0)`.as('total'));
        if (a.lifecycle_stage) counted = counted.where('lifecycle_stage', '=', a.lifecycle_stage);
        if (a.pipeline_id) counted = counted.where('pipeline_id', '=', a.pipeline_id);
        return counted.as('t');
      })
      .leftJoinLateral(
        (eb) => {
          let page = dealRows(eb, true).select('d.created_at as list_at');
          if (a.lifecycle_stage) page = page.where('d.lifecycle_stage', '=', a.lifecycle_stage);
          if (a.pipeline_id) page = page.where('d.pipeline_id', '=', a.pipeline_id);
          if (a.after) page = page.where(afterAnchor({ table: 'deals', alias: 'd' }, a.after));
          return page
            .orderBy('d.created_at', 'desc')
            .orderBy('d.id', 'desc')
            .limit(a.limit)
            .offset(a.offset)
            .as('page');
        },
        (join) => join.onTrue(),
      )
      .select('t.total as list_total')
      .selectAll('page')
      .orderBy('page.list_at', 'desc')
      .orderBy('page.id', 'desc'),
);

/**
 * A page of deals, newest first, by `offset` or after a cursor (the last deal seen: read in the index's
 * order from there, however deep). The total comes from the counts the database keeps per organization,
 * pipeline and lifecycle stage: a few rows summed, whatever the organization's size.
 */
export async function queryDeals(em: EntityManager, query: DealListQuery) {
  await checkCursor(em, { table: 'deals', what: 'deal' }, query);
  const rows = await dealPage(em, {
    lifecycle_stage: query.lifecycle_stage,
    pipeline_id: query.pipeline_id,
    after: query.after,
    limit: query.limit + 1,
    offset: query.offset,
  });
  const total = Number(rows[0]?.list_total ?? 0);
  const found = rows[0]?.id == null ? [] : rows;
  const data = found.slice(0, query.limit).map((row) => toDealDto(row as DealRow));
  return {
    data,
    meta: {
      total,
      limit: query.limit,
      offset: query.offset,
      next_cursor: found.length > query.limit ? (data.at(-1)?.id ?? null) : null,
    },
  };
}

/** The kept total of a list (GET /deals's, by lifecycle stage and pipeline): a few rows summed. */
const keptDealTotal = orgQuery(
  (
    db,
    a: {
      lifecycle_stage?: string;
      pipeline_id?: string;
      stage_ids?: readonly string[];
      pipeline_ids?: readonly string[];
      lifecycle_stages?: readonly string[];
    },
  ) => {
    let counted = db.selectFrom('deal_counts').select(sql<string>`coalesce(sum(n), 0)`.as('total'));
    if (a.lifecycle_stage) counted = counted.where('lifecycle_stage', '=', a.lifecycle_stage);
    if (a.pipeline_id) counted = counted.where('pipeline_id', '=', a.pipeline_id);
    if (a.stage_ids) counted = counted.where(sql<SqlBool>`stage_id = any(${a.stage_ids}::uuid[])`);
    if (a.pipeline_ids) counted = counted.where(sql<SqlBool>`pipeline_id = any(${a.pipeline_ids}::uuid[])`);
    if (a.lifecycle_stages)
      counted = counted.where(sql<SqlBool>`lifecycle_stage = any(${a.lifecycle_stages}::text[])`);
    return counted;
  },
);

/**
 * The deals counted by the kept counts: the contract list's own parameters, and a filter's `eq`/`in` on
 * stage, pipeline and lifecycle stage (`narrow`, query/list.ts).
 */
export async function dealTotal(
  em: EntityManager,
  a: { lifecycle_stage?: string; pipeline_id?: string },
  narrow: KeptNarrowing = {},
) {
  const [row] = await keptDealTotal(em, {
    lifecycle_stage: a.lifecycle_stage,
    pipeline_id: a.pipeline_id,
    stage_ids: narrow.stage_id,
    pipeline_ids: narrow.pipeline_id,
    lifecycle_stages: narrow.lifecycle_stage,
  });
  return Number(row?.total ?? 0);
}

const oneDeal = orgQuery((db, a: { id: string }) => dealRows(db).where('d.id', '=', a.id), {
  reusePlan: true,
});

export async function queryDeal(em: EntityManager, id: string): Promise<DealDto | undefined> {
  const [row] = await oneDeal(em, { id });
  return row ? toDealDto(row as DealRow) : undefined;
}

/**
 * The deal detail: the deal, its stakeholders (`stakeholdersOf`: its contacts and those linked to it), its most recent activities, in one
 * statement. Three statements cost three round trips, and on loopback a round trip's socket writes were the
 * largest part of the call's CPU.
 */
const dealDetail = orgQuery(
  (db, a: { id: string; activities: number }) =>
    dealRows(db)
      .select((eb) => [
        // Ordered inside the aggregate, where json_agg over an ordered subquery keeps the order only in practice.
        stakeholdersOf([
          'id',
          'name',
          'email',
          'title',
          'role_type',
          'influence_level',
          'engagement_level',
          'sentiment',
        ]).as('stakeholders'),
        // The system's activities and the logged ones linked to the deal (its subject the description,
        // occurred_at its time), each newest first from its index, merged and cut to the limit.
        eb
          .selectFrom((r) =>
            r
              .selectFrom((m) =>
                m
                  .selectFrom(
                    m
                      .selectFrom('activities as a')
                      .select(['a.id', 'a.type', 'a.description', 'a.created_at'])
                      .whereRef('a.deal_id', '=', 'd.id')
                      .orderBy('a.created_at', 'desc')
                      .orderBy('a.id', 'desc')
                      .limit(a.activities)
                      .as('sys'),
                  )
                  .selectAll()
                  .unionAll(
                    m
                      .selectFrom(
                        m
                          .selectFrom('engagement_links as l')
                          .innerJoin('engagements as e', 'e.id', 'l.engagement_id')
                          .select([
                            'e.id',
                            'e.type',
                            'e.subject as description',
                            'l.occurred_at as created_at',
                          ])
                          .whereRef('l.target_id', '=', 'd.id')
                          .orderBy('l.occurred_at', 'desc')
                          .orderBy('l.engagement_id', 'desc')
                          .limit(a.activities)
                          .as('usr'),
                      )
                      .selectAll(),
                  )
                  .as('m'),
              )
              .selectAll()
              .orderBy('m.created_at', 'desc')
              .orderBy('m.id', 'desc')
              .limit(a.activities)
              .as('r'),
          )
          .select((r) =>
            r.fn
              .coalesce(
                r.fn
                  .jsonAgg(
                    jsonBuildObject({
                      id: r.ref('r.id'),
                      type: r.ref('r.type'),
                      description: r.ref('r.description'),
                      created_at: isoOf('r.created_at'),
                    }),
                  )
                  .orderBy('r.created_at', 'desc')
                  .orderBy('r.id', 'desc'),
                sql`'[]'::json`,
              )
              .as('list'),
          )
          .as('recent_activities'),
      ])
      .where('d.id', '=', a.id),
  { reusePlan: true },
);

export async function queryDealDetail(em: EntityManager, id: string, activityLimit: number) {
  const [row] = await dealDetail(em, { id, activities: activityLimit });
  if (!row) return undefined;
  return {
    deal: toDealDto(row as DealRow),
    stakeholders: asJson<StakeholderRow[]>(row.stakeholders),
    recent_activities: asJson<ActivityRow[]>(row.recent_activities),
  };
}

type StakeholderRow = z.infer<typeof Stakeholder>;
type ActivityRow = z.infer<typeof Activity>;
