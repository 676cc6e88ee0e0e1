import type { EntityManager, Tables } from '@crm/db';
import { type Expression, expressionBuilder, type SqlBool, sql } from 'kysely';
import { ApiError } from './errors.ts';
import { orgQuery } from './org-scope.ts';

/** A json column: parsed by the driver (pg) or handed back as text (PGlite, for some expressions). */
export const asJson = <T>(v: unknown): T => (typeof v === 'string' ? (JSON.parse(v) as T) : (v as T));

export const numberOrNull = (v: unknown): number | null => (v == null ? null : Number(v));

/** A timestamptz column as ISO 8601 in UTC, formatted by the database so both drivers agree. */
export const isoOf = (column: string) =>
  sql<string>`to_char(${sql.ref(column)} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** A jsonb column as its stored text, for a list to answer as it is (`StoredJson`). */
export const storedText = (column: string) => sql<string>`${sql.ref(column)}::text`;

/** A list's anchor row, by id: is the cursor's row there? */
const anchorOf = {
  deals: orgQuery((db, a: { id: string }) => db.selectFrom('deals').select('id').where('id', '=', a.id), {
    reusePlan: true,
  }),
  contacts: orgQuery(
    (db, a: { id: string }) => db.selectFrom('contacts').select('id').where('id', '=', a.id),
    {
      reusePlan: true,
    },
  ),
  companies: orgQuery(
    (db, a: { id: string }) => db.selectFrom('companies').select('id').where('id', '=', a.id),
    { reusePlan: true },
  ),
  saved_views: orgQuery(
    (db, a: { id: string }) => db.selectFrom('saved_views').select('id').where('id', '=', a.id),
    { reusePlan: true },
  ),
};

/** The lists read newest first by cursor. */
type CursorList = keyof typeof anchorOf;

/**
 * The check that a cursor's row is there, before a page after it is read; `after` or `offset`, not both.
 */
export async function checkCursor(
  em: EntityManager,
  list: { table: CursorList; what: string },
  query: { after?: string | undefined; offset: number },
): Promise<void> {
  if (!query.after) return;
  if (query.offset > 0) throw new ApiError('invalid_request', 'after: give after or offset, not both');
  const [anchor] = await anchorOf[list.table](em, { id: query.after });
  if (!anchor)
    throw new ApiError(
      'invalid_request',
      `after: no ${list.what} with this id (deleted since?); start again without after`,
    );
}

/**
 * The condition of a page after a cursor on a list read newest first (`created_at desc, id desc`). The
 * anchor is compared in SQL at the column's full precision, its organization bound (not correlated): the
 * planner reads it once and descends the (org_id, created_at, id) index from there instead of filtering
 * every row.
 */
export function afterAnchor(list: { table: CursorList; alias: string }, after: string): Expression<SqlBool> {
  const anchor = expressionBuilder<Tables, never>()
    .selectFrom(`${list.table} as anchor` as 'deals as anchor')
    .select(['anchor.created_at', 'anchor.id'])
    .where('anchor.id', '=', after);
  return sql<SqlBool>`(${sql.ref(`${list.alias}.created_at`)}, ${sql.ref(`${list.alias}.id`)}) < (${anchor})`;
}
