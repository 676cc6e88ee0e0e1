import { type Expression, type RawBuilder, type SqlBool, sql } from 'kysely';
import { nearest } from '../did-you-mean.ts';
import { ApiError } from '../errors.ts';
import { DateTime } from '../schemas.ts';
import type { Catalogue, Field, ValueType } from './fields.ts';

/** The limits of one filter (docs/api/query.md). */
export const FILTER_LIMITS = {
  conditions: 50,
  /** Levels of and/or/not. */
  depth: 4,
  /** Values of one in/nin/has_any/has_all. */
  values: 500,
  /** Characters of one text value. */
  text: 1_000,
} as const;

export const OPERATORS = [
  'eq',
  'neq',
  'lt',
  'lte',
  'gt',
  'gte',
  'between',
  'in',
  'nin',
  'contains',
  'starts_with',
  'is_null',
  'has_any',
  'has_all',
] as const;
export type Operator = (typeof OPERATORS)[number];

const ORDERED: Operator[] = ['eq', 'neq', 'lt', 'lte', 'gt', 'gte', 'between', 'in', 'nin', 'is_null'];
const EQUATABLE: Operator[] = ['eq', 'neq', 'in', 'nin', 'is_null'];

/** The operators each type of field takes. */
export const OPERATORS_BY_TYPE: Record<ValueType, readonly Operator[]> = {
  string: ['eq', 'neq', 'in', 'nin', 'contains', 'starts_with', 'is_null'],
  number: ORDERED,
  'date-time': ORDERED,
  date: ORDERED,
  enum: EQUATABLE,
  uuid: EQUATABLE,
  boolean: ['eq', 'neq', 'is_null'],
  array: ['has_any', 'has_all', 'is_null'],
  json: ['is_null'],
};

/** A condition checked against its field: what `compile` turns into SQL. */
export type Checked =
  | { kind: 'and' | 'or'; nodes: Checked[] }
  | { kind: 'not'; node: Checked }
  | { kind: 'leaf'; field: Field; op: Operator; value: unknown; pointer: string };

const invalid = (pointer: string, message: string) =>
  new ApiError('invalid_request', `${pointer}: ${message}`);

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const kindOf = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** One value for `field`, as SQL compares it; a 400 naming `pointer` when it does not fit. */
function checkValue(field: Field, value: unknown, pointer: string): unknown {
  const expected = (what: string) => invalid(pointer, `expected ${what}, got ${kindOf(value)}`);
  switch (field.type) {
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) throw expected('a number');
      return value;
    case 'boolean':
      if (typeof value !== 'boolean') throw expected('true or false');
      return value;
    case 'date-time':
      if (typeof value !== 'string') throw expected('an ISO 8601 date-time string');
      if (!DateTime.safeParse(value).success)
        throw invalid(pointer, `${JSON.stringify(value)} is not an ISO 8601 date-time with a time zone`);
      return new Date(value).toISOString();
    case 'date':
      if (typeof value !== 'string') throw expected('a date string (YYYY-MM-DD)');
      if (
        !DATE.test(value) ||
        Number.isNaN(Date.parse(value)) ||
        new Date(value).toISOString().slice(0, 10) !== value
      )
        throw invalid(pointer, `${JSON.stringify(value)} is not a date (YYYY-MM-DD)`);
      return value;
    case 'uuid':
      if (typeof value !== 'string') throw expected('a uuid string');
      if (!UUID.test(value)) throw invalid(pointer, `${JSON.stringify(value)} is not a uuid`);
      return value.toLowerCase();
    case 'enum':
    case 'array': {
      if (typeof value !== 'string') throw expected('a string');
      const values = field.values ?? [];
      if (!values.includes(value))
        throw invalid(
          pointer,
          `${JSON.stringify(value)} is not a value of ${field.name} (${values.map((v) => JSON.stringify(v)).join(', ') || 'none defined'})`,
        );
      return value;
    }
    default:
      if (typeof value !== 'string') throw expected('a string');
      if (value.length > FILTER_LIMITS.text)
        throw invalid(pointer, `at most ${FILTER_LIMITS.text} characters`);
      if (value.includes('\u0000') || !value.isWellFormed())
        throw invalid(pointer, 'must be valid text (no NUL, no lone surrogate)');
      return value;
  }
}

function checkLeaf(
  node: Record<string, unknown>,
  pointer: string,
  catalogue: Catalogue,
  objectName: string,
): Omit<Extract<Checked, { kind: 'leaf' }>, 'pointer'> {
  const unknown = Object.keys(node).filter((k) => k !== 'field' && k !== 'op' && k !== 'value');
  if (unknown.length > 0)
    throw invalid(
      pointer,
      `unknown key${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => JSON.stringify(k)).join(', ')} (a condition has field, op and value)`,
    );
  const { field: name, op } = node;
  if (typeof name !== 'string')
    throw invalid(`${pointer}/field`, `expected a field name string, got ${kindOf(name)}`);
  const field = catalogue.get(name);
  if (!field) {
    const guess = nearest(name, catalogue.keys());
    throw invalid(
      `${pointer}/field`,
      `unknown field ${JSON.stringify(name)}${guess ? `; did you mean ${JSON.stringify(guess)}?` : ` (the fields of ${objectName}: see docs/api/query.md)`}`,
    );
  }
  if (typeof op !== 'string' || !(OPERATORS as readonly string[]).includes(op))
    throw invalid(`${pointer}/op`, `unknown operator ${JSON.stringify(op)}; one of ${OPERATORS.join(', ')}`);
  const allowed = OPERATORS_BY_TYPE[field.type];
  if (!allowed.includes(op as Operator))
    throw invalid(
      `${pointer}/op`,
      `"${op}" does not apply to ${name} (${field.type === 'array' ? 'a multi-select' : `a ${field.type}`} field); use one of ${allowed.join(', ')}`,
    );
  const at = `${pointer}/value`;
  if (!Object.hasOwn(node, 'value')) throw invalid(at, 'Required');
  const value = node.value;
  switch (op as Operator) {
    case 'is_null':
      if (typeof value !== 'boolean') throw invalid(at, `expected true or false, got ${kindOf(value)}`);
      return { kind: 'leaf', field, op: 'is_null', value };
    case 'between': {
      if (!Array.isArray(value) || value.length !== 2)
        throw invalid(
          at,
          `expected [low, high], got ${Array.isArray(value) ? `${value.length} value${value.length === 1 ? '' : 's'}` : kindOf(value)}`,
        );
      const [low, high] = value.map((v, i) => checkValue(field, v, `${at}/${i}`));
      // An empty range would match nothing without a word: the bounds are likely swapped.
      const order = (v: unknown) => (typeof v === 'number' ? v : Date.parse(String(v)));
      if (['number', 'date', 'date-time'].includes(field.type) && order(low) > order(high))
        throw invalid(
          at,
          `low ${JSON.stringify(low)} is above high ${JSON.stringify(high)}: give [low, high]`,
        );
      return { kind: 'leaf', field, op: 'between', value: [low, high] };
    }
    case 'in':
    case 'nin':
    case 'has_any':
    case 'has_all': {
      if (!Array.isArray(value)) throw invalid(at, `expected an array of values, got ${kindOf(value)}`);
      if (value.length === 0) throw invalid(at, 'expected at least one value');
      if (value.length > FILTER_LIMITS.values) throw invalid(at, `at most ${FILTER_LIMITS.values} values`);
      return {
        kind: 'leaf',
        field,
        op: op as Operator,
        value: value.map((v, i) => checkValue(field, v, `${at}/${i}`)),
      };
    }
    case 'contains':
    case 'starts_with': {
      const text = checkValue(field, value, at) as string;
      if (text.length === 0) throw invalid(at, 'must not be empty');
      return { kind: 'leaf', field, op: op as Operator, value: text };
    }
    default:
      if (value === null)
        throw invalid(at, `expected a value, got null (use "op": "is_null" for empty fields)`);
      return { kind: 'leaf', field, op: op as Operator, value: checkValue(field, value, at) };
  }
}

/**
 * The filter tree checked against the object's fields, every problem a 400 naming its node by JSON pointer
 * (`filter/and/1/field: unknown field …`): nothing is ever left out or guessed at.
 */
export function checkFilter(
  tree: unknown,
  catalogue: Catalogue,
  objectName: string,
  root = 'filter',
): Checked {
  let conditions = 0;
  const walk = (node: unknown, pointer: string, depth: number): Checked => {
    if (!isPlainObject(node))
      throw invalid(pointer, `expected an object (a condition or an and/or/not group), got ${kindOf(node)}`);
    const groups = ['and', 'or', 'not'].filter((k) => Object.hasOwn(node, k));
    if (groups.length === 0) {
      conditions++;
      if (conditions > FILTER_LIMITS.conditions)
        throw invalid(pointer, `more than ${FILTER_LIMITS.conditions} conditions in one filter`);
      return { ...checkLeaf(node, pointer, catalogue, objectName), pointer } as Checked;
    }
    const [group] = groups as ['and' | 'or' | 'not'];
    const extra = Object.keys(node).filter((k) => k !== group);
    if (extra.length > 0)
      throw invalid(
        pointer,
        `a group has one key (and, or or not); also got ${extra.map((k) => JSON.stringify(k)).join(', ')}`,
      );
    if (depth + 1 > FILTER_LIMITS.depth)
      throw invalid(`${pointer}/${group}`, `nested deeper than ${FILTER_LIMITS.depth} levels of and/or/not`);
    const inner = node[group];
    if (group === 'not') return { kind: 'not', node: walk(inner, `${pointer}/not`, depth + 1) };
    if (!Array.isArray(inner))
      throw invalid(`${pointer}/${group}`, `expected an array, got ${kindOf(inner)}`);
    if (inner.length === 0) throw invalid(`${pointer}/${group}`, 'expected at least one condition');
    return { kind: group, nodes: inner.map((n, i) => walk(n, `${pointer}/${group}/${i}`, depth + 1)) };
  };
  return walk(tree, root, 0);
}

/** The text value as a LIKE pattern matching it literally. */
const literal = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/** A key of the prefix index (`lower(x) collate "C"`, as search reads titles and names). */
const prefixKey = (expr: RawBuilder<unknown>) => sql`lower(${expr}) collate "C"`;

/** SQL of a value for the field's type (a parameter, cast as the column compares). */
function param(field: Field, value: unknown): RawBuilder<unknown> {
  switch (field.type) {
    case 'number':
      return sql`${String(value)}::numeric`;
    case 'date-time':
      return sql`${value}::timestamptz`;
    case 'date':
      return sql`${value}::date`;
    case 'uuid':
      return sql`${value}::uuid`;
    case 'boolean':
      return sql`${value}::boolean`;
    default:
      return sql`${value}::text`;
  }
}

/**
 * A leaf that is true for the rows it keeps; it may be null (unknown) for others, never true. On a field a
 * kept table serves for `op` (Field.lookup), the rows are those whose ids it holds (`x.id in (select
 * record_id …)`: the database reads them there, not every row's JSON). Where the table may hold more ids
 * than the condition keeps (a text kept shortened, a unique field's claims of a value's text) the
 * condition on the JSON is ANDed; where it holds exactly those (`Lookup.exact`) it is left out: beside the
 * ids it changes no answer and misleads the planner, whose estimate of a JSON condition is a guess (one
 * region's 20,000 deals of 200,000 estimated at 417, so every deal was read and sorted: 180 ms, against
 * 2 ms down the newest-first index without it).
 */
function leafSql(field: Field, op: Operator, value: unknown): RawBuilder<SqlBool> {
  const lookup = field.lookup;
  if (!lookup?.serves(op, value)) return jsonLeafSql(field, op, value);
  // The subquery brings its own brackets.
  const ids = sql<SqlBool>`${sql.ref(lookup.id)} in ${lookup.ids(op, value)}`;
  return lookup.exact(op, value) ? ids : sql`(${jsonLeafSql(field, op, value)} and ${ids})`;
}

function jsonLeafSql(field: Field, op: Operator, value: unknown): RawBuilder<SqlBool> {
  const e = field.expr;
  const list = (values: unknown[]) => sql.join(values.map((v) => param(field, v)));
  switch (op) {
    case 'eq':
      return sql`${e} = ${param(field, value)}`;
    case 'neq':
      return sql`${e} is distinct from ${param(field, value)}`;
    case 'lt':
      return sql`${e} < ${param(field, value)}`;
    case 'lte':
      return sql`${e} <= ${param(field, value)}`;
    case 'gt':
      return sql`${e} > ${param(field, value)}`;
    case 'gte':
      return sql`${e} >= ${param(field, value)}`;
    case 'between': {
      const [low, high] = value as [unknown, unknown];
      return sql`(${e} >= ${param(field, low)} and ${e} <= ${param(field, high)})`;
    }
    case 'in':
      return sql`${e} in (${list(value as unknown[])})`;
    case 'nin':
      return sql`not coalesce(${e} in (${list(value as unknown[])}), false)`;
    case 'contains':
      return sql`${e} ilike ${`%${literal(value as string)}%`}`;
    case 'starts_with':
      // One range of a prefix index where there is one (deals' title and company, contacts' name).
      return sql`(${prefixKey(e)} >= lower(${value}::text) and ${prefixKey(e)} < lower(${value}::text) || chr(1114111))`;
    case 'is_null':
      return value ? sql`${e} is null` : sql`${e} is not null`;
    case 'has_any':
      return sql`${e} ?| ${sql`array[${sql.join((value as string[]).map((v) => sql`${v}::text`))}]`}`;
    case 'has_all':
      return sql`${e} ?& ${sql`array[${sql.join((value as string[]).map((v) => sql`${v}::text`))}]`}`;
  }
}

/**
 * The checked filter as a condition. Two-valued: a condition on an empty (null) field is false, and `not`
 * keeps exactly the rows its condition does not (`not coalesce(…, false)`), so `not` of `eq` keeps the
 * empty ones too, as `neq` does.
 */
export function compileFilter(node: Checked): Expression<SqlBool> {
  switch (node.kind) {
    case 'and':
    case 'or': {
      const parts = node.nodes.map((n) => compileFilter(n));
      return sql<SqlBool>`(${sql.join(parts, sql.raw(node.kind === 'and' ? ' and ' : ' or '))})`;
    }
    case 'not':
      return sql<SqlBool>`not coalesce(${compileFilter(node.node)}, false)`;
    case 'leaf': {
      const condition = leafSql(node.field, node.op, node.value);
      return node.field.related ? node.field.related.exists(condition) : condition;
    }
  }
}
