import type { EntityManager, Tables } from '@crm/db';
import { type Expression, type Kysely, type SqlBool, sql } from 'kysely';
import { ApiError } from '../errors.ts';
import { limitStatementTime, orgDb } from '../org-scope.ts';
import { allows } from '../scopes.ts';
import { type Catalogue, catalogueOf, type ObjectFrom, type QueryObject, servedOps } from './fields.ts';
import { type Checked, checkFilter, compileFilter } from './filter.ts';
import { afterRow, orderOf, parseSort, type SortKey } from './sort.ts';
import { countOnce } from './totals.ts';
import { type AppliedView, appliedView, withinView } from './views.ts';

/**
 * The most a list reading a field no index serves may take in the database (issue 31: such a filter answers
 * within 2 s or is refused with the field to index); PostgreSQL's, the embedded database has no timeout.
 */
export const SCAN_TIMEOUT_MS = 2_000;

/** A listable object: its declaration, the rows a page answers with, and how its cursor's row is named. */
export interface ListedObject extends QueryObject {
  /** FROM with its joins and the columns a page answers (as `from`, with a select). */
  rows: (db: Parameters<QueryObject['from']>[0]) => ObjectFrom;
  /** `deal`, `contact`: what the messages call one row. */
  what: string;
  /**
   * The fields the kept count (`keptTotal`) can be narrowed by: a filter of only `eq`/`in` conditions on
   * them, ANDed, is counted from it instead of row by row (a stage of a million deals holds 170,000).
   */
  keptBy?: readonly string[];
  /**
   * FROM the table alone, for a count whose conditions name no joined column (`stage_name`): PostgreSQL
   * drops the unused joins of `from` but still reads each row for the columns they named, where the count
   * of one owner's 40,000 deals could be read from an index alone (500 against 55 ms at a million deals).
   */
  table?: (db: Parameters<QueryObject['from']>[0]) => ObjectFrom;
}

/** The values a kept count is narrowed to, by field: `{ stage_id: [id] }`. */
export type KeptNarrowing = Readonly<Record<string, readonly string[]>>;

export interface ListQuery {
  /** The filter tree, as parsed from JSON; checked here against the object's fields. */
  filter?: unknown;
  sort?: string;
  /** A saved view's id: its filter ANDed with `filter`, its sort unless `sort` is given. */
  view?: string;
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
export async function queryList<Counted extends boolean = true>(
  em: EntityManager,
  object: ListedObject,
  query: ListQuery,
  options: {
    /** false: no count of the rows the conditions keep (activities' lists answer no total). */
    count?: Counted;
    /** The scopes of the caller's key: a filter on related records needs theirs. */
    granted: readonly string[];
    /** The list's own conditions (`lifecycle_stage`, `q`), ANDed with the filter. */
    where?: Expression<SqlBool>[];
    /**
     * The total when there is no filter, from the counts the database keeps (the contract list's own), so
     * that a sort alone costs no count of the organization's rows; counted with the conditions otherwise.
     */
    keptTotal?: (narrow: KeptNarrowing) => Promise<number>;
  },
): Promise<{
  rows: Record<string, unknown>[];
  total: Counted extends false ? undefined : number;
  next_cursor: string | null;
}> {
  const catalogue = await catalogueOf(em, object);
  const { granted, keptTotal } = options;
  const conditions = [...(options.where ?? [])];
  const view = query.view === undefined ? undefined : await appliedView(em, object.name, query.view);
  const checked = filterOf(object, catalogue, { filter: query.filter, view }, granted);
  if (checked) conditions.push(compileFilter(checked));
  const keys =
    query.sort === undefined && view?.sort
      ? withinView(view, object.name, () => parseSort(view.sort as string, catalogue))
      : parseSort(query.sort ?? object.defaultSort ?? '-created_at', catalogue);
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
  // A list that reads a field no index serves may read every row of the organization: it gets at most
  // SCAN_TIMEOUT_MS (never more than the statement timeout it would have had), then the 400 naming them.
  const scan = unindexed(checked, keys).length > 0;
  const narrow = checked === undefined ? {} : keptNarrowing(checked, object.keptBy ?? []);
  const keptCount = narrow && keptTotal && options.count !== false ? () => keptTotal(narrow) : undefined;
  // A scan's kept count is read before its transaction, on the unit of work's own connection (the
  // embedded database has one: inside, it would wait for the transaction); otherwise beside the page.
  const kept = scan && keptCount ? await keptCount() : undefined;
  const countFrom = checked && namesJoined(checked) ? object.from : (object.table ?? object.from);
  // A filter of one condition an indexed custom field serves exactly: counted from its kept table alone.
  const lookedUp = options.where?.length ? undefined : lookupCondition(checked);
  // A filter on related records reads their links (`deal_stakeholders`), which the version does not follow.
  const reuse = checked === undefined || !namesRelated(checked);
  const read = (em: EntityManager, db: Kysely<Tables>) => {
    let page = all(object.rows(db));
    if (query.after)
      page = page.where(afterRow(object, keys, query.after, checked ? required(checked) : new Set()));
    for (const order of orderOf(object, keys)) page = page.orderBy(order);
    return Promise.all([
      page
        .limit(query.limit + 1)
        .offset(query.offset)
        .execute(),
      options.count === false
        ? []
        : kept !== undefined
          ? [{ total: String(kept) }]
          : keptCount
            ? keptCount().then((total) => [{ total: String(total) }])
            : countOnce(
                em,
                db,
                lookedUp
                  ? db.selectFrom(lookedUp.as('ids')).select(sql<string>`count(*)`.as('total'))
                  : all(countFrom(db)).select(sql<string>`count(*)`.as('total')),
                reuse,
              ).then((row) => [row]),
    ]) as Promise<[Record<string, unknown>[], Array<{ total: string }>]>;
  };
  const [rows, [counted]] = await (scan
    ? em.transactional(async (tx) => {
        await limitStatementTime(tx, SCAN_TIMEOUT_MS);
        return read(tx, orgDb(tx));
      })
    : read(em, db)
  ).catch((err: unknown) => {
    throw cutOff(err) ? tooSlow(object, catalogue, checked, keys) : err;
  });
  const found = rows.slice(0, query.limit);
  return {
    rows: found,
    total: (options.count === false ? undefined : Number(counted?.total ?? 0)) as Counted extends false
      ? undefined
      : number,
    next_cursor: rows.length > query.limit ? ((found.at(-1)?.id as string | undefined) ?? null) : null,
  };
}

/**
 * A list's conditions from its `filter` and its saved view's, each checked against the object's fields
 * (with its related records' scopes) on its own, so each keeps its own limits and pointers, then ANDed
 * (one flat `and`: the kept count and the cursor read the top-level conditions). A view that no longer fits
 * is a 400 naming it (`withinView`). Undefined when there are none.
 */
export function filterOf(
  object: QueryObject,
  catalogue: Catalogue,
  sent: { filter?: unknown; view?: AppliedView | undefined },
  granted: readonly string[],
): Checked | undefined {
  const check = (tree: unknown) => {
    const checked = checkFilter(tree, catalogue, object.name);
    checkScopes(checked, granted);
    return checked;
  };
  const { view } = sent;
  const saved = view?.filter == null ? undefined : withinView(view, object.name, () => check(view.filter));
  const own = sent.filter === undefined ? undefined : check(sent.filter);
  if (!saved || !own) return saved ?? own;
  const parts = (c: Checked) => (c.kind === 'and' ? c.nodes : [c]);
  return { kind: 'and', nodes: [...parts(saved), ...parts(own)] };
}

/** Whether a filter names a related record's field (`company.industry`, `stakeholders.role_type`). */
function namesRelated(node: Checked): boolean {
  if (node.kind === 'leaf') return node.field.related !== undefined;
  if (node.kind === 'not') return namesRelated(node.node);
  return node.nodes.some(namesRelated);
}

/** Whether a filter names a column of a table its object joins (a field declared on another alias). */
function namesJoined(node: Checked): boolean {
  if (node.kind === 'leaf') return node.field.joined === true;
  if (node.kind === 'not') return namesJoined(node.node);
  return node.nodes.some(namesJoined);
}

/**
 * The ids a filter keeps, read from a custom field's kept table alone, when the filter is one condition
 * (alone or in an `and` of one) that the table serves exactly (`Lookup.exact`): an index-only count of
 * the values' rows, where the rows' own count would read every record the condition keeps.
 */
function lookupCondition(checked: Checked | undefined) {
  const leaf = checked?.kind === 'and' && checked.nodes.length === 1 ? checked.nodes[0] : checked;
  if (leaf?.kind !== 'leaf' || leaf.field.related) return undefined;
  const { lookup } = leaf.field;
  if (!lookup?.serves(leaf.op, leaf.value) || !lookup.exact(leaf.op, leaf.value)) return undefined;
  return lookup.ids(leaf.op, leaf.value);
}

/**
 * The filter as a narrowing of the kept count, when it is one: `eq`/`in` conditions, ANDed, each on a field
 * of `keptBy` once; undefined otherwise (the rows are counted).
 */
function keptNarrowing(checked: Checked, keptBy: readonly string[]): KeptNarrowing | undefined {
  const leaves = checked.kind === 'and' ? checked.nodes : [checked];
  const narrow: Record<string, readonly string[]> = {};
  for (const node of leaves) {
    if (node.kind !== 'leaf' || (node.op !== 'eq' && node.op !== 'in')) return undefined;
    const name = node.field.name;
    if (!keptBy.includes(name) || Object.hasOwn(narrow, name)) return undefined;
    const values = node.op === 'eq' ? [node.value as string] : (node.value as string[]);
    // The kept count files an empty lifecycle stage under '', which no condition on the column matches.
    if (values.includes('')) return undefined;
    narrow[name] = values;
  }
  return narrow;
}

/**
 * The fields every row the filter keeps holds a value of: those of its top-level conditions (a lone one or
 * the leaves of its `and`) other than `is_null: true`, `neq` and `nin`, which keep empty values too.
 */
function required(checked: Checked): Set<string> {
  const leaves = checked.kind === 'and' ? checked.nodes : [checked];
  const names = new Set<string>();
  for (const node of leaves)
    if (
      node.kind === 'leaf' &&
      !node.field.related &&
      (node.op === 'is_null' ? node.value === false : node.op !== 'neq' && node.op !== 'nin')
    )
      names.add(node.field.name);
  return names;
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

/**
 * The fields of a filter and sort that no index serves: a field without one, a custom field's condition
 * its kept table does not serve (`neq` of an indexed field, `contains` of a unique one), a sort by a custom
 * field (its index is of conditions, not of an order).
 */
export function unindexed(checked: Checked | undefined, keys: SortKey[]): string[] {
  const names = new Set<string>();
  const walk = (node: Checked) => {
    if (node.kind === 'leaf') {
      const { field, op, value } = node;
      if (!field.index || (field.lookup && !field.lookup.serves(op, value))) names.add(field.name);
    } else if (node.kind === 'not') walk(node.node);
    else for (const n of node.nodes) walk(n);
  };
  if (checked) walk(checked);
  for (const { field } of keys) if (!field.index || field.lookup) names.add(field.name);
  return [...names];
}

/**
 * A filtered or sorted list the statement timeout cut off (SCAN_TIMEOUT_MS, or DATABASE_QUERY_TIMEOUT_MS when shorter): a
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
  const indexed = [...catalogue.values()]
    .filter((f) => f.index)
    .map((f) => (f.lookup ? `${f.name} (${servedOps(f.lookup)})` : f.name));
  return new ApiError(
    'invalid_request',
    `filter: the list ran over its time limit (${SCAN_TIMEOUT_MS / 1000} s at most for a list that reads fields no index serves): no index serves ${slow.join(', ') || 'its conditions'}, so every ${object.what} of the organization is read; add a condition on an indexed field (${indexed.join(', ')}) (a custom field is indexed with "indexed": true, PATCH /custom-fields/${object.name}/{key}; docs/api/query.md, Speed)`,
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
