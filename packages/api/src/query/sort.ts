import type { Tables } from '@crm/db';
import { type Expression, expressionBuilder, type RawBuilder, type SqlBool, sql } from 'kysely';
import { nearest } from '../did-you-mean.ts';
import { ApiError } from '../errors.ts';
import type { Catalogue, Field, QueryObject } from './fields.ts';

/** The most keys one `sort` names (the id, added last, aside). */
export const MAX_SORT_KEYS = 5;

export interface SortKey {
  field: Field;
  desc: boolean;
}

const invalid = (message: string) => new ApiError('invalid_request', message);

/**
 * `sort=-value,created_at`: each key a sortable field, `-` for descending. Strict like the filter: an
 * unknown or unsortable field, a repeated one or more than MAX_SORT_KEYS is a 400 naming its position.
 */
export function parseSort(text: string, catalogue: Catalogue): SortKey[] {
  const parts = text.split(',');
  if (parts.length > MAX_SORT_KEYS) throw invalid(`sort: at most ${MAX_SORT_KEYS} keys`);
  const seen = new Set<string>();
  return parts.map((part, i) => {
    const raw = part.trim();
    const desc = raw.startsWith('-');
    const name = desc ? raw.slice(1) : raw.startsWith('+') ? raw.slice(1) : raw;
    if (name === '') throw invalid(`sort/${i}: empty key (write field or -field, separated by commas)`);
    const field = catalogue.get(name);
    if (!field) {
      const sortable = [...catalogue.values()].filter((f) => f.sortable).map((f) => f.name);
      const guess = nearest(name, sortable);
      throw invalid(
        `sort/${i}: unknown field ${JSON.stringify(name)}${guess ? `; did you mean ${JSON.stringify(guess)}?` : ''}`,
      );
    }
    if (!field.sortable)
      throw invalid(
        `sort/${i}: ${JSON.stringify(name)} cannot be sorted by (${field.related ? "a related record's field" : `a ${field.type === 'array' ? 'multi-select' : field.type} field`})`,
      );
    if (seen.has(name)) throw invalid(`sort/${i}: ${JSON.stringify(name)} is named twice`);
    seen.add(name);
    return { field, desc };
  });
}

/** The id, the last key of every sort, in the last given key's direction. */
const withId = (object: QueryObject, keys: SortKey[]): SortKey[] => [
  ...keys,
  {
    field: { name: 'id', type: 'uuid', expr: sql.ref(`${object.alias}.id`), nullable: false, sortable: true },
    desc: keys.at(-1)?.desc ?? true,
  },
];

/**
 * The ORDER BY of a sorted list: its keys, empty values last whichever the direction, then the id in the
 * last key's direction (so `-created_at` is the default order exactly): a total order, so pages never
 * overlap nor skip. A NOT NULL column's key is written without `nulls last`, so that its index (built
 * `desc`, whose nulls come first) serves the order.
 */
export function orderOf(object: QueryObject, keys: SortKey[]): RawBuilder<unknown>[] {
  return withId(object, keys).map(
    ({ field, desc }) =>
      sql`${field.expr} ${sql.raw(desc ? 'desc' : 'asc')}${sql.raw(field.nullable ? ' nulls last' : '')}`,
  );
}

/**
 * The rows after the cursor's row (`after`, an id) in the sort's order. The anchor's sort values are read
 * in SQL (a scalar subquery per key, on the same FROM, run once), at their full precision: the cursor is
 * the row, not a copy of its values. Keys all NOT NULL and in one direction compare as one row value,
 * `(created_at, id) < (…)`, which an index reads from (also keys that may be empty but that `present`, the
 * fields the filter requires a value of, says are not on this list); otherwise `(k1, k2, id) > (a1, a2, aid)` is
 * expanded key by key, for mixed directions and empty values (which sort last).
 */
export function afterRow(
  object: QueryObject,
  keys: SortKey[],
  after: string,
  present: ReadonlySet<string> = new Set(),
): Expression<SqlBool> {
  const all = withId(object, keys);
  const desc = all[0]?.desc;
  // A nullable key the filter requires a value of (`value between …`) holds no empty value on any page:
  // the row comparison reads on from the cursor down the key's index.
  if (all.every((k) => (!k.field.nullable || present.has(k.field.name)) && k.desc === desc)) {
    // One row subquery, as the contract list's cursor (read-model.ts, afterAnchor): the planner reads it
    // once and descends the index from there.
    const row = object
      .from(expressionBuilder<Tables, never>())
      .select(all.map((k, i) => k.field.expr.as(`k${i}`)))
      .where(sql.ref(`${object.alias}.id`), '=', after);
    return sql<SqlBool>`(${sql.join(all.map((k) => k.field.expr))}) ${sql.raw(desc ? '<' : '>')} (${row})`;
  }
  const anchors = all.map((key) => anchor(object, key.field, after));
  return sql<SqlBool>`(${sql.join(
    all.map((key, i) => {
      const e = key.field.expr;
      const a = anchors[i] as RawBuilder<unknown>;
      const equalBefore = all
        .slice(0, i)
        .map((k, j) =>
          k.field.nullable
            ? sql`${k.field.expr} is not distinct from ${anchors[j] as RawBuilder<unknown>}`
            : sql`${k.field.expr} = ${anchors[j] as RawBuilder<unknown>}`,
        );
      const after = sql`${e} ${sql.raw(key.desc ? '<' : '>')} ${a}`;
      const beyond = key.field.nullable ? sql`(${after} or (${e} is null and ${a} is not null))` : after;
      return sql`(${sql.join([...equalBefore, beyond], sql.raw(' and '))})`;
    }),
    sql.raw(' or '),
  )})`;
}

/** The anchor row's value of a key: the same expression on the same FROM (its aliases shadow the outer ones), for the row `after`. */
function anchor(object: QueryObject, field: Field, after: string): RawBuilder<unknown> {
  const eb = expressionBuilder<Tables, never>();
  return sql`(${object
    .from(eb)
    .select(field.expr.as('anchor_value'))
    .where(sql.ref(`${object.alias}.id`), '=', after)})`;
}
