import type { EntityManager } from '@crm/db';
import { type Expression, type SqlBool, sql } from 'kysely';
import { ApiError } from '../errors.ts';
import { orgDb } from '../org-scope.ts';
import { allows } from '../scopes.ts';
import { type Catalogue, catalogueOf, type ObjectFrom, type QueryObject } from './fields.ts';
import { type Checked, checkFilter, compileFilter } from './filter.ts';
import { afterRow, orderOf, parseSort, type SortKey } from './sort.ts';

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
  options: {
    /** The scopes of the caller's key: a filter on related records needs theirs. */
    granted: readonly string[];
    /** The list's own conditions (`lifecycle_stage`, `q`), ANDed with the filter. */
    where?: Expression<SqlBool>[];
    /**
     * The total when there is no filter, from the counts the database keeps (the contract list's own), so
     * that a sort alone costs no count of the organization's rows; counted with the conditions otherwise.
     */
    keptTotal?: () => Promise<number>;
  },
): Promise<{ rows: Record<string, unknown>[]; total: number; next_cursor: string | null }> {
  const catalogue = await catalogueOf(em, object);
  const { granted, keptTotal } = options;
  const conditions = [...(options.where ?? [])];
  const checked = query.filter === undefined ? undefined : checkFilter(query.filter, catalogue, object.name);
  if (checked) {
    checkScopes(checked, granted);
    conditions.push(compileFilter(checked));
  }
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
    checked === undefined && keptTotal
      ? keptTotal().then((total) => [{ total: String(total) }])
      : all(object.from(db)).select(sql<string>`count(*)`.as('total')).execute(),
  ]).catch((err: unknown) => {
    throw cutOff(err) ? tooSlow(object, catalogue, checked, keys) : err;
  })) as [Record<string, unknown>[], Array<{ total: string }>];
  const found = rows.slice(0, query.limit);
  return {
    rows: found,
    total: Number(counted?.total ?? 0),
    next_cursor: rows.length > query.limit ? ((found.at(-1)?.id as string | undefined) ?? null) : null,
  };
}

/** Whether the database cut the statement off at its timeout (SQLSTATE 57014), `err` or what caused it. */
function cutOff(err: unknown): boolean {
  for (
    let e = err, depth = 0;
    e && typeof e === 'object' && depth < 5;
    e = (e as { cause?: unknown }).cause, depth++
  )
    if ((e as { code?: unknown }).code === '57014') return true;
  return false;
}

/** The fields of a filter and sort that no index serves. */
export function unindexed(checked: Checked | undefined, keys: SortKey[]): string[] {
  const names = new Set<string>();
  const walk = (node: Checked) => {
    if (node.kind === 'leaf') {
      if (!node.field.index) names.add(node.field.name);
    } else if (node.kind === 'not') walk(node.node);
    else for (const n of node.nodes) walk(n);
  };
  if (checked) walk(checked);
  for (const { field } of keys) if (!field.index) names.add(field.name);
  return [...names];
}

/**
 * A filtered or sorted list the statement timeout cut off (DATABASE_QUERY_TIMEOUT_MS, 10 s by default): a
 * 400 that names the fields no index serves and those that one does, not the 503 of a database that is
 * not answering (a retry would read as many rows again).
 */
export function tooSlow(
  object: ListedObject,
  catalogue: Catalogue,
  checked: Checked | undefined,
  keys: SortKey[],
): ApiError {
  const slow = unindexed(checked, keys);
  const indexed = [...catalogue.values()].filter((f) => f.index).map((f) => f.name);
  return new ApiError(
    'invalid_request',
    `filter: the list ran over the statement timeout: no index serves ${slow.join(', ') || 'its conditions'}, so every ${object.what} of the organization is read; add a condition on an indexed field (${indexed.join(', ')}) or ask for an index on ${slow[0] ?? 'the field'} (docs/api/query.md, Speed)`,
  );
}

/**
 * A condition on related records discloses their values (a deal's value through `deal.value` on
 * contacts): the key needs the scope that reads them, as their own list would (403 naming the node).
 */
export function checkScopes(node: Checked, granted: readonly string[]): void {
  if (node.kind === 'not') {
    checkScopes(node.node, granted);
    return;
  }
  if (node.kind !== 'leaf') {
    for (const n of node.nodes) checkScopes(n, granted);
    return;
  }
  const related = node.field.related;
  if (related && !allows(granted, related.scope))
    throw new ApiError(
      'insufficient_scope',
      `${node.pointer}/field: ${node.field.name} reads ${related.via}, which needs the scope ${related.scope}; this API key has ${granted.join(', ')}`,
    );
}
