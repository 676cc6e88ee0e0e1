import type { EntityManager } from '@crm/db';
import { type Expression, type SqlBool, sql } from 'kysely';
import { queryList } from '../../query/list.ts';
import { DEALS } from '../../query/objects.ts';
import { syncAnswer, syncedOf, syncList } from '../../query/sync.ts';
import { type DealRow, dealTotal, queryDeals, toDealDto } from './deal.queries.ts';
import type { DealListQuery, DealQueryBody } from './deal.schemas.ts';

const SYNCED_DEALS = syncedOf('deals', () => DEALS);

/**
 * GET /deals and POST /deals/query. Without `filter`, `sort` and `view` (a saved view), the list as the
 * contract has it (newest first, its total from the kept counts); with any, through the filter language,
 * the list's own parameters ANDed with the filter and the total counted exactly. With `updated_since`, a sync
 * (docs/api/sync.md): the changed deals meeting the same conditions, in sync order.
 */
export async function listDeals(
  em: EntityManager,
  query: DealListQuery | DealQueryBody,
  granted: readonly string[],
) {
  const where: Expression<SqlBool>[] = [];
  if (query.lifecycle_stage) where.push(sql<SqlBool>`d.lifecycle_stage = ${query.lifecycle_stage}`);
  if (query.pipeline_id) where.push(sql<SqlBool>`d.pipeline_id = ${query.pipeline_id}::uuid`);
  if (query.updated_since !== undefined) {
    const page = await syncList(
      em,
      SYNCED_DEALS,
      { ...query, updated_since: query.updated_since },
      { granted, where },
    );
    return {
      data: page.rows.map((row) => toDealDto(row as unknown as DealRow)),
      ...syncAnswer(page, query.limit),
    };
  }
  if (query.filter === undefined && query.sort === undefined && query.view === undefined)
    return queryDeals(em, query);
  const page = await queryList(em, DEALS, query, {
    granted,
    where,
    keptTotal: (narrow) => dealTotal(em, query, narrow),
  });
  return {
    data: page.rows.map((row) => toDealDto(row as unknown as DealRow)),
    meta: { total: page.total, limit: query.limit, offset: query.offset, next_cursor: page.next_cursor },
  };
}
