import type { EntityManager, Tables } from '@crm/db';
import {
  type Expression,
  expressionBuilder,
  type RawBuilder,
  type SelectQueryBuilder,
  type SqlBool,
  sql,
} from 'kysely';
import type { z } from 'zod';
import type {
  FieldType as CustomFieldType,
  CustomObject,
} from '../features/custom-fields/custom-field.schemas.ts';
import { fieldRules } from '../features/custom-fields/custom-fields.service.ts';
import type { FieldRule } from '../features/custom-fields/custom-values.ts';
import type { Scope } from '../scopes.ts';
import type { Operator } from './filter.ts';

/** What a field holds, as the filter language types it: which operators apply and what a value must be. */
export type ValueType =
  | 'string'
  | 'number'
  | 'date-time'
  | 'date'
  | 'enum'
  | 'boolean'
  | 'uuid'
  | 'array'
  | 'json';

/** A SELECT of an object's rows with its joins (its columns under the aliases its fields name), nothing selected yet. */
// biome-ignore lint/suspicious/noExplicitAny: the aliases of a declared object are its own, not typed through Tables
export type ObjectFrom = any;
type Builder = Pick<ReturnType<typeof expressionBuilder<Tables, never>>, 'selectFrom'>;

/** One field a filter or sort can name. */
export interface Field {
  /** As a client names it: `value`, `custom.region`, `stakeholders.role_type`. */
  name: string;
  type: ValueType;
  /** The SQL expression of its value, over the aliases of its object's FROM. */
  expr: RawBuilder<unknown>;
  /** Whether a row may hold no value (null): a sort puts those last, which a NOT NULL column need not say. */
  nullable: boolean;
  /** enum and array: the values it can hold. */
  values?: readonly string[];
  /** Whether `sort` may name it: a scalar of the object itself (not a related record's, not an array or JSON). */
  sortable: boolean;
  /** The index that serves it, when one does (docs/api/query.md). */
  index?: string;
  /** A column of a table the object joins (`s.name` on deals), not of its own. */
  joined?: boolean;
  /**
   * A custom field whose values a kept table holds (an indexed field's `custom_indexed_values`, a unique
   * field's `custom_unique_values`): the conditions it serves read the ids there rather than every row's
   * JSON. Its `index` serves those conditions only, and no sort.
   */
  lookup?: Lookup;
  /** A related record's field: the condition holds for the row when one of its related records meets it. */
  related?: {
    via: string;
    /** Whether the object's output carries the related records (see QueryObject.relations). */
    carried: boolean;
    /** The scope a key needs to read the related records (a filter on them discloses their values). */
    scope: Scope;
    exists: (condition: Expression<SqlBool>) => Expression<SqlBool>;
  };
}

/**
 * The records whose value of a custom field meets a condition, read from a kept table of the values
 * (`ids`: a select of their `record_id`). Exactly those records when `exact` says so; otherwise more (a
 * text kept shortened, a claim of a value's text), and the filter ANDs the condition on the JSON itself.
 */
export interface Lookup {
  table: 'custom_indexed_values' | 'custom_unique_values';
  /** The operators it serves, as the docs and messages list them (`is_null` only as `false`: has a value). */
  ops: readonly Operator[];
  serves: (op: Operator, value: unknown) => boolean;
  /** The column of the record's id the ids are compared with (`d.id`). */
  id: string;
  // biome-ignore lint/suspicious/noExplicitAny: a subquery of the kept table, under the caller's FROM
  ids: (op: Operator, value: unknown) => SelectQueryBuilder<any, any, { record_id: string }>;
  /** Whether the ids are exactly the records meeting the condition: a count can then read them alone. */
  exact: (op: Operator, value: unknown) => boolean;
}

/** A field of an object's own, as declared: its column unless it says otherwise, its type unless it says otherwise. */
export interface FieldDeclaration {
  /** The SQL column, `s.name`; `<alias>.<field>` by default. */
  column?: string;
  type?: ValueType;
  values?: readonly string[];
  index?: string;
}

/**
 * The declaration of a listable object: its table and FROM, its output schema (each field of which is
 * filterable and sortable, typed from the schema unless declared otherwise), its custom fields and the
 * records one hop away. Adding an object to the language is one of these (deals.query.ts, contacts.query.ts).
 */
export interface QueryObject {
  name: string;
  /** The table's alias in `from`; its `id` is the tie-breaker of every sort and the cursor's anchor. */
  alias: string;
  /** FROM the table (as `alias`) and its joins, nothing selected: for conditions, counts and cursors. */
  from: (db: Builder) => ObjectFrom;
  /** The output schema whose fields are the object's fields (`custom` aside). */
  output: z.ZodObject;
  /** Fields whose column or type the schema does not say. */
  fields?: Record<string, FieldDeclaration>;
  /** The fields the schema has but a filter cannot name. */
  hidden?: readonly string[];
  custom?: CustomObject;
  /**
   * Related records one hop away: `stakeholders` on deals; `link` relates the related table's alias to
   * this one's; `scope` is what a key needs to filter by their fields.
   */
  relations?: Record<
    string,
    {
      object: () => QueryObject;
      link: RawBuilder<SqlBool>;
      scope: Scope;
      /**
       * The output carries these records under the relation's name (an activity's `links`), so a filter
       * over the record as emitted (an event's data, query/evaluate.ts) can read them.
       */
      carried?: boolean;
    }
  >;
  /** The order of a list without `sort` (`-created_at` unless said). */
  defaultSort?: string;
}

type ZodLike = { def: { type: string; innerType?: ZodLike; format?: string }; options?: readonly string[] };

/** A field's type from its zod output schema. */
function typeOfSchema(
  schema: ZodLike,
): { type: ValueType; values?: readonly string[]; nullable: boolean } | undefined {
  let s = schema;
  let nullable = false;
  while (s.def.type === 'nullable' || s.def.type === 'optional') {
    nullable = true;
    s = s.def.innerType as ZodLike;
  }
  const typed = typeOf(s);
  return typed && { ...typed, nullable };
}

function typeOf(s: ZodLike): { type: ValueType; values?: readonly string[] } | undefined {
  switch (s.def.type) {
    case 'string':
      if (s.def.format === 'uuid') return { type: 'uuid' };
      if (s.def.format === 'datetime') return { type: 'date-time' };
      return { type: 'string' };
    case 'number':
      return { type: 'number' };
    case 'boolean':
      return { type: 'boolean' };
    case 'enum':
      return { type: 'enum', values: s.options ?? [] };
    default:
      return undefined;
  }
}

/** How the filter language types each type of custom field (the typed client's filter types read it too). */
export const CUSTOM_TYPES: Record<CustomFieldType, ValueType> = {
  text: 'string',
  long_text: 'string',
  email: 'string',
  url: 'string',
  phone: 'string',
  number: 'number',
  currency: 'number',
  boolean: 'boolean',
  date: 'date',
  datetime: 'date-time',
  select: 'enum',
  multi_select: 'array',
  json: 'json',
};

/**
 * A custom value as its type compares: read out of `custom` with a cast guarded by the JSON value's own
 * type, so that a row the condition does not keep (another organization's, where the same key may be
 * another type) can never fail the statement, whatever order the planner tests conditions in. An indexed
 * field's rows are written by the same guards (`crm_custom_index_entries`, Migration20261203000100): a
 * change here is a change there, in a migration, or an indexed field's answers would differ.
 */
function customExpr(alias: string, rule: FieldRule): RawBuilder<unknown> {
  const value = sql`${sql.ref(`${alias}.custom`)}->${sql.lit(rule.key)}`;
  const text = sql`${sql.ref(`${alias}.custom`)}->>${sql.lit(rule.key)}`;
  const typed = (json: string, cast: RawBuilder<unknown>) =>
    sql`(case when jsonb_typeof(${value}) = ${sql.lit(json)} then ${cast} end)`;
  switch (CUSTOM_TYPES[rule.type]) {
    case 'number':
      return typed('number', sql`(${value})::numeric`);
    case 'boolean':
      return typed('boolean', sql`(${value})::boolean`);
    case 'date':
      return sql`(case when ${text} ~ '^\\d{4}-\\d{2}-\\d{2}$' then (${text})::date end)`;
    case 'date-time':
      return sql`(case when ${text} ~ '^\\d{4}-\\d{2}-\\d{2}T' then (${text})::timestamptz end)`;
    case 'array':
      return typed('array', value);
    case 'json':
      return sql`(case when jsonb_typeof(${value}) <> 'null' then ${value} end)`;
    default:
      return typed('string', text);
  }
}

/**
 * The claims of a unique field's values (the trigger of Migration20261130000000_custom_fields hashes each
 * active unique field's `custom ->> key`): for text values only, whose text is the value itself; a number's
 * stored text may be written otherwise (`1.0`) than the filter's. Its `eq` and `in`, one index lookup per
 * value. The organization's scope is added to the subquery as to every tenant table's.
 */
function claimedBy(alias: string, object: CustomObject, rule: FieldRule): Lookup | undefined {
  const type = CUSTOM_TYPES[rule.type];
  if (!rule.unique || rule.archived || (type !== 'string' && type !== 'enum')) return undefined;
  const ops: Operator[] = ['eq', 'in'];
  return {
    table: 'custom_unique_values',
    ops,
    serves: (op) => ops.includes(op),
    id: `${alias}.id`,
    ids: (op, value) =>
      expressionBuilder<Tables, never>()
        .selectFrom('custom_unique_values as u')
        .select('u.record_id')
        .where('u.object', '=', object)
        .where('u.key', '=', rule.key)
        .where(
          'u.value_hash',
          'in',
          (op === 'eq' ? [value as string] : (value as string[])).map(
            (v) => sql<Buffer>`sha256(convert_to(${v}::text, 'UTF8'))`,
          ),
        ),
    // A claim is of the value's text, whatever its JSON type: the count reads the rows.
    exact: () => false,
  };
}

/**
 * How many characters of a text value `custom_indexed_values` keeps (its `left(…, 500)`, a B-tree entry
 * holding at most 2,704 bytes): a shorter value found there is the value itself.
 */
const KEPT_TEXT = 500;

/** The operators an indexed field's type is served for (docs/api/query.md, Speed). */
const INDEXED_OPS: Partial<Record<ValueType, readonly Operator[]>> = {
  string: ['eq', 'in', 'is_null'],
  enum: ['eq', 'in', 'is_null'],
  boolean: ['eq', 'is_null'],
  number: ['eq', 'in', 'lt', 'lte', 'gt', 'gte', 'between', 'is_null'],
  date: ['eq', 'lt', 'lte', 'gt', 'gte', 'between', 'is_null'],
  'date-time': ['eq', 'lt', 'lte', 'gt', 'gte', 'between', 'is_null'],
  // Not is_null: an empty list is a value, and has no row.
  array: ['has_any', 'has_all'],
};

/**
 * An indexed field's values as `custom_indexed_values` holds them (Migration20261203000100, its SQL
 * function `crm_custom_index_entries`: the same values `customExpr` reads, in the column of their type,
 * text to its first 500 characters, a date as its midnight UTC, a boolean as its text, a multi-select's
 * options a row each). `neq`, `nin` and `is_null: true` keep the records without a value, which have no
 * row: they read the JSON, as `contains` and `starts_with` do.
 */
function indexedBy(alias: string, object: CustomObject, rule: FieldRule): Lookup | undefined {
  const type = CUSTOM_TYPES[rule.type];
  const ops = INDEXED_OPS[type];
  if (!rule.indexed || rule.archived || !ops) return undefined;
  const column =
    type === 'number'
      ? 'v.value_num'
      : type === 'date' || type === 'date-time'
        ? 'v.value_time'
        : 'v.value_text';
  const kept = (v: unknown): RawBuilder<unknown> => {
    switch (type) {
      case 'number':
        return sql`${String(v)}::numeric`;
      case 'date':
        return sql`((${v}::date)::timestamp at time zone 'UTC')`;
      case 'date-time':
        return sql`${v}::timestamptz`;
      case 'boolean':
        return sql`${String(v)}::text`;
      default:
        return sql`left(${v}::text, ${sql.lit(KEPT_TEXT)})`;
    }
  };
  const col = sql.ref(column);
  const condition = (op: Operator, value: unknown): RawBuilder<SqlBool> => {
    const list = (values: unknown) => sql.join((values as unknown[]).map(kept));
    switch (op) {
      case 'in':
      case 'has_any':
      case 'has_all':
        return sql`${col} in (${list(value)})`;
      case 'lt':
        return sql`${col} < ${kept(value)}`;
      case 'lte':
        return sql`${col} <= ${kept(value)}`;
      case 'gt':
        return sql`${col} > ${kept(value)}`;
      case 'gte':
        return sql`${col} >= ${kept(value)}`;
      case 'between': {
        const [low, high] = value as [unknown, unknown];
        return sql`${col} between ${kept(low)} and ${kept(high)}`;
      }
      case 'is_null':
        return sql`${col} is not null`;
      default:
        return sql`${col} = ${kept(value)}`;
    }
  };
  const values = (op: Operator, value: unknown) =>
    op === 'between' || op === 'in' || op === 'has_any' || op === 'has_all' ? (value as unknown[]) : [value];
  return {
    table: 'custom_indexed_values',
    ops,
    serves: (op, value) => ops.includes(op) && (op !== 'is_null' || value === false),
    id: `${alias}.id`,
    ids: (op, value) => {
      const rows = expressionBuilder<Tables, never>()
        .selectFrom('custom_indexed_values as v')
        .select('v.record_id')
        .where('v.object', '=', object)
        .where('v.key', '=', rule.key)
        .where(condition(op, value));
      // A multi-select's record has a row per option: once each (has_any), or when it has them all.
      if (op === 'has_any') return rows.distinct();
      if (op === 'has_all')
        return rows
          .groupBy('v.record_id')
          .having(sql<number>`count(distinct v.value_text)`, '=', new Set(value as string[]).size);
      return rows;
    },
    // Text shorter than what is kept is found whole (a select's options are at most 100 characters).
    exact: (op, value) => values(op, value).every((v) => typeof v !== 'string' || v.length < KEPT_TEXT),
  };
}

/** The operators a looked-up field is served for, as the docs and messages say them. */
export const servedOps = (lookup: Lookup) =>
  lookup.ops.map((op) => (op === 'is_null' ? 'is_null false' : op)).join(', ');

function ownFields(object: QueryObject, rules: readonly FieldRule[]): Field[] {
  const fields: Field[] = [];
  const hidden = new Set(['custom', ...(object.hidden ?? [])]);
  for (const [name, schema] of Object.entries(object.output.shape)) {
    if (hidden.has(name)) continue;
    const declared = object.fields?.[name] ?? {};
    const typed = typeOfSchema(schema as never);
    const type = declared.type ?? typed?.type;
    if (!type) throw new Error(`${object.name}.${name}: no filter type for this field; declare one`);
    fields.push({
      name,
      type,
      values: declared.values ?? typed?.values,
      nullable: typed?.nullable ?? true,
      expr: sql.ref(declared.column ?? `${object.alias}.${name}`),
      sortable: type !== 'array' && type !== 'json',
      index: declared.index,
      joined: declared.column !== undefined && !declared.column.startsWith(`${object.alias}.`),
    });
  }
  for (const rule of rules) {
    const type = CUSTOM_TYPES[rule.type];
    const lookup =
      object.custom &&
      (indexedBy(object.alias, object.custom, rule) ?? claimedBy(object.alias, object.custom, rule));
    fields.push({
      name: `custom.${rule.key}`,
      type,
      values: type === 'enum' || type === 'array' ? rule.options.map((o) => o.value) : undefined,
      expr: customExpr(object.alias, rule),
      nullable: true,
      sortable: type !== 'array' && type !== 'json',
      ...(lookup && { lookup, index: `${lookup.table} (${servedOps(lookup)})` }),
    });
  }
  return fields;
}

/** Every field a filter on `object` can name, by name: its own, its custom ones, its related records'. */
export type Catalogue = ReadonlyMap<string, Field>;

const rulesOf = (em: EntityManager, object: QueryObject) =>
  object.custom ? fieldRules(em, object.custom) : Promise.resolve([] as FieldRule[]);

/** The organization's catalogue of `object`'s fields (its custom fields read through the definitions' cache). */
export function catalogueOf(em: EntityManager, object: QueryObject): Promise<Catalogue> {
  return buildCatalogue(object, (o) => rulesOf(em, o));
}

/**
 * The fields every organization has (no custom ones), as the typed client's filter types list them
 * (`npm run generate -w @crm/client`): the custom ones come from `crm schema types`.
 */
export function builtInCatalogue(object: QueryObject): Promise<Catalogue> {
  return buildCatalogue(object, async () => []);
}

async function buildCatalogue(
  object: QueryObject,
  rules: (object: QueryObject) => Promise<FieldRule[]>,
): Promise<Catalogue> {
  const catalogue = new Map<string, Field>();
  for (const field of ownFields(object, await rules(object))) catalogue.set(field.name, field);
  for (const [via, relation] of Object.entries(object.relations ?? {})) {
    const related = relation.object();
    const eb = expressionBuilder<Tables, never>();
    const exists = (condition: Expression<SqlBool>) =>
      eb.exists(related.from(eb).select(sql.lit(1).as('one')).where(relation.link).where(condition));
    for (const field of ownFields(related, await rules(related)))
      catalogue.set(`${via}.${field.name}`, {
        ...field,
        name: `${via}.${field.name}`,
        sortable: false,
        index: undefined,
        related: { via, scope: relation.scope, exists, carried: relation.carried ?? false },
      });
  }
  return catalogue;
}
