import { type EntityManager, ORG_FILTER } from '@crm/db';
import { ApiError } from './errors.ts';
import { orgDb } from './org-scope.ts';

/**
 * Hot read paths (lists, details, search, health) are plain SQL: hydrating entities cost more than the
 * queries themselves. Their organization comes from the same place the ORM filter reads it, the
 * request's filter parameters set at authentication; every such query takes it as its first parameter.
 */
export function currentOrg(em: EntityManager): string {
  const params = em.getFilterParams<{ orgId?: string }>(ORG_FILTER);
  if (!params?.orgId) throw new Error('no organization in this unit of work');
  return params.orgId;
}

/** Runs a read query whose first placeholder is the caller's organization. */
export function orgRows<T extends object>(
  em: EntityManager,
  sql: string,
  params: unknown[] = [],
): Promise<T[]> {
  return em.execute<T[]>(sql, [currentOrg(em), ...params] as never[]);
}

/** A timestamptz column as ISO 8601 in UTC, formatted by the database so both drivers agree. */
export const isoSql = (column: string) =>
  `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** A json column: parsed by the driver (pg) or handed back as text (PGlite, for some expressions). */
export const asJson = <T>(v: unknown): T => (typeof v === 'string' ? (JSON.parse(v) as T) : (v as T));

export const numberOrNull = (v: unknown): number | null => (v == null ? null : Number(v));

/**
 * The condition of a page after a cursor on a list read newest first (`created_at desc, id desc`), and the
 * check that the cursor's row is there. The anchor is compared in SQL at the column's full precision, with
 * its organization bound (not correlated): the planner reads it once and descends the (org_id, created_at,
 * id) index from there instead of filtering every row.
 */
export async function afterCursor(
  em: EntityManager,
  list: { table: 'deals' | 'contacts'; alias: string; what: string },
  query: { after?: string; offset: number },
): Promise<{ condition: string; params: unknown[] } | undefined> {
  if (!query.after) return undefined;
  if (query.offset > 0) throw new ApiError('invalid_request', 'after: give after or offset, not both');
  const anchor = await orgDb(em)
    .selectFrom(list.table)
    .select('id')
    .where('id', '=', query.after)
    .executeTakeFirst();
  if (!anchor)
    throw new ApiError(
      'invalid_request',
      `after: no ${list.what} with this id (deleted since?); start again without after`,
    );
  const { alias: t } = list;
  return {
    condition: `(${t}.created_at, ${t}.id) < (select a.created_at, a.id from ${list.table} a where a.org_id = ? and a.id = ?)`,
    params: [currentOrg(em), query.after],
  };
}
