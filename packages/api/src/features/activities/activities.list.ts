import type { EntityManager } from '@crm/db';
import { type Expression, expressionBuilder, type SqlBool, sql } from 'kysely';
import { queryList } from '../../query/list.ts';
import { ACTIVITIES } from '../../query/objects.ts';
import { syncAnswer, syncedOf, syncList } from '../../query/sync.ts';
import { listActivities, toActivityDto } from './activities.service.ts';
import type { ActivityListQuery, ActivityQueryBody } from './activity.schemas.ts';

/** The list's own parameters as conditions on `e` (an engagement), for the query language's list. */
function ownConditions(query: ActivityListQuery | ActivityQueryBody): Expression<SqlBool>[] {
  const eb = expressionBuilder();
  const where: Expression<SqlBool>[] = [];
  for (const target of [query.deal_id, query.contact_id, query.company_id])
    if (target)
      where.push(
        sql<SqlBool>`exists (${eb
          .selectFrom('engagement_links as o' as never)
          .select(sql.lit(1).as('one'))
          .where(sql<SqlBool>`o.engagement_id = e.id and o.target_id = ${target}::uuid`)})`,
      );
  if (query.type) where.push(sql<SqlBool>`e.type = ${query.type}`);
  if (query.status) where.push(sql<SqlBool>`e.status = ${query.status}`);
  if (query.due_before) where.push(sql<SqlBool>`e.due_at < ${query.due_before}::timestamptz`);
  return where;
}

/** The activities as a sync reads them (docs/api/sync.md): the language's object, read when called. */
const SYNCED_ACTIVITIES = syncedOf('engagements', () => ACTIVITIES);

/**
 * GET /activities and POST /activities/query. Without `filter`, `sort` and `view` (a saved view), the list
 * as it was (its own filters, read along the link or type index); with any, through the query language,
 * its own parameters ANDed with the filter, the same keyset cursor (`after`, an activity's id) and no total.
 */
export async function listActivitiesBy(
  em: EntityManager,
  query: ActivityListQuery | ActivityQueryBody,
  granted: readonly string[],
) {
  if (query.updated_since !== undefined) {
    const page = await syncList(
      em,
      SYNCED_ACTIVITIES,
      { ...query, updated_since: query.updated_since },
      { granted, where: ownConditions(query) },
    );
    const { meta, ...deleted } = syncAnswer(page, query.limit);
    return {
      data: page.rows.map(toActivityDto),
      meta: { limit: meta.limit, next_cursor: meta.next_cursor, has_more: meta.has_more },
      ...deleted,
    };
  }
  if (query.filter === undefined && query.sort === undefined && query.view === undefined)
    return listActivities(em, query as ActivityListQuery);
  const page = await queryList(
    em,
    ACTIVITIES,
    { ...query, offset: 0 },
    { granted, where: ownConditions(query), count: false },
  );
  return {
    data: page.rows.map(toActivityDto),
    meta: { limit: query.limit, next_cursor: page.next_cursor },
  };
}
