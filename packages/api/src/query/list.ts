import type { EntityManager } from '@crm/db';
import { type Expression, type SqlBool, sql } from 'kysely';
import { ApiError } from '../errors.ts';
import { orgDb } from '../org-scope.ts';
import { catalogueOf, type ObjectFrom, type QueryObject } from './fields.ts';
import { checkFilter, compileFilter } from './filter.ts';
import { afterRow, orderOf, parseSort } from './sort.ts';

/** A listable object: its declaration, the rows a page answers with, and how its cursor's row is named. */
export interface ListedObject extends QueryObject {
  /** FROM with its joins and the columns a page answers (as `from`, with a select). */
  rows: (db: Parameters<QueryObject['from']>[0]) => ObjectFrom;
  /** `deal`, `contact`: what the messages call one row. */
  what: string;
}

export interface ListQuery {
  /** The filter tree, as parsed from JSON; checked here against the object's fields. */
  filter?: unknown;
  sort?: string;
  after?: string;
  limit: number;
  offset: number;
}

/**
 * A page of `object`'s rows through the filter and sort language: the conditions of `filter` and `where`
 * (the list's own parameters, `lifecycle_stage`, `q`) together, sorted by `sort` (the id breaking ties)
 * or newest first, a page by `offset` or after the cursor's row, and the exact count of the rows the
 * conditions keep. Every mistake is a 400 naming where it is (docs/api/query.md).
 */
export async function queryList(
  em: EntityManager,
  object: ListedObject,
  query: ListQuery,
  where: Expression<SqlBool>[] = [],
): Promise<{ rows: Record<string, unknown>[]; total: number; next_cursor: string | null }> {
  const catalogue = await catalogueOf(em, object);
  const conditions = [...where];
  if (query.filter !== undefined)
    conditions.push(compileFilter(checkFilter(query.filter, catalogue, object.name)));
  const keys = parseSort(query.sort ?? '-created_at', catalogue);
  const db = orgDb(em);
  const id = `${object.alias}.id`;
  if (query.after) {
    if (query.offset > 0) throw new ApiError('invalid_request', 'after: give after or offset, not both');
    const anchor = await object
      .from(db)
      .select(sql.ref(id).as('id'))
      .where(sql.ref(id), '=', query.after)
      .execute();
    if (anchor.length === 0)
      throw new ApiError(
        'invalid_request',
        `after: no ${object.what} with this id (deleted since?); start again without after`,
      );
  }
  const all = (q: ObjectFrom) => conditions.reduce((acc: ObjectFrom, c) => acc.where(c), q);
  let page = all(object.rows(db));
  if (query.after) page = page.where(afterRow(object, keys, query.after));
  for (const order of orderOf(object, keys)) page = page.orderBy(order);
  const [rows, [counted]] = (await Promise.all([
    page
      .limit(query.limit + 1)
      .offset(query.offset)
      .execute(),
    all(object.from(db)).select(sql<string>`count(*)`.as('total')).execute(),
  ])) as [Record<string, unknown>[], Array<{ total: string }>];
  const found = rows.slice(0, query.limit);
  return {
    rows: found,
    total: Number(counted?.total ?? 0),
    next_cursor: rows.length > query.limit ? ((found.at(-1)?.id as string | undefined) ?? null) : null,
  };
}
