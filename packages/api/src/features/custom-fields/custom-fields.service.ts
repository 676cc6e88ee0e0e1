import { type EntityManager, sqlOf, transaction } from '@crm/db';
import { sql } from 'kysely';
import { LRUCache } from 'lru-cache';
import { ApiError, conflict, notFound } from '../../errors.ts';
import { currentOrg, lockForOrg, orgDb, orgQuery } from '../../org-scope.ts';
import { asJson, isoOf } from '../../read-model.ts';
import {
  CUSTOM_LIMITS,
  type CustomFieldConversionDto,
  type CustomFieldConvertInput,
  type CustomFieldCreateInput,
  type CustomFieldDto,
  type CustomFieldOption,
  type CustomFieldUpdateInput,
  type CustomObject,
  type FieldType,
} from './custom-field.schemas.ts';
import {
  checkedValue,
  compilePattern,
  convertedValue,
  type FieldRule,
  INDEXED_TYPES,
  RANGED_TYPES,
  SELECT_TYPES,
  TEXT_TYPES,
  UNIQUE_TYPES,
} from './custom-values.ts';

/** A value for a jsonb column, as JSON text: the driver would send an array as a PostgreSQL array. */
const jsonb = (value: unknown) => sql<never>`${JSON.stringify(value)}::jsonb`;

const invalid = (message: string) => new ApiError('invalid_request', message);

const definitionColumns = [
  'object',
  'key',
  'label',
  'type',
  'required',
  'is_unique',
  'is_indexed',
  'default_value',
  'options',
  'validation',
  'description',
  'ai_hint',
  'archived_at',
  isoOf('created_at').as('created_at'),
  isoOf('updated_at').as('updated_at'),
] as const;

type DefinitionRow = {
  object: string;
  key: string;
  label: string;
  type: string;
  required: boolean;
  is_unique: boolean;
  is_indexed: boolean;
  default_value: unknown;
  options: unknown;
  validation: unknown;
  description: string | null;
  ai_hint: string | null;
  archived_at: Date | string | null;
  created_at: string;
  updated_at: string | null;
};

function toDto(row: DefinitionRow): CustomFieldDto {
  return {
    object: row.object as CustomFieldDto['object'],
    key: row.key,
    label: row.label,
    type: row.type as CustomFieldDto['type'],
    required: row.required,
    unique: row.is_unique,
    indexed: row.is_indexed,
    default: (row.default_value as CustomFieldDto['default']) ?? null,
    options: row.options as CustomFieldOption[],
    validation: row.validation as CustomFieldDto['validation'],
    description: row.description,
    ai_hint: row.ai_hint as CustomFieldDto['ai_hint'],
    archived: row.archived_at !== null,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** Every field of `object`, archived ones too, in the order they were defined: one statement, compiled once. */
const definitionRows = orgQuery((db, a: { object: string }) =>
  db.selectFrom('custom_fields').select(definitionColumns).where('object', '=', a.object).orderBy('position'),
);

/**
 * How long a process reuses an organization's field definitions it has read, as it does its pipeline
 * stages (STAGE_CACHE_TTL_MS): a create or PATCH then costs no round trip for them. A schema change
 * through this API forgets them at once in the process that made it; other instances, and changes made by
 * hand in SQL, are seen within this time (docs/api/custom-fields.md: Limits). Unique values never wait:
 * the database checks them itself.
 */
export const FIELD_CACHE_TTL_MS = 10_000;
const recentRules = new LRUCache<string, Promise<FieldRule[]>>({ max: 10_000, ttl: FIELD_CACHE_TTL_MS });

/** The rules a write checks values against: every field of `object`, archived ones marked (they take no values). */
export function fieldRules(em: EntityManager, object: CustomObject): Promise<FieldRule[]> {
  const key = `${currentOrg(em)}:${object}`;
  let rules = recentRules.get(key);
  if (!rules) {
    rules = readRules(em, object);
    recentRules.set(key, rules);
    // A failed read is not remembered.
    rules.catch(() => recentRules.delete(key));
  }
  return rules;
}

/**
 * A change of the organization's fields, in one transaction, after which this process reads them again
 * (a read made while it ran may have remembered what it saw).
 */
export async function schemaChange<T>(
  em: EntityManager,
  change: (tx: EntityManager) => Promise<T>,
): Promise<T> {
  try {
    return await transaction(em, change);
  } finally {
    const prefix = `${currentOrg(em)}:`;
    for (const key of [...recentRules.keys()]) if (key.startsWith(prefix)) recentRules.delete(key);
  }
}

async function readRules(em: EntityManager, object: CustomObject): Promise<FieldRule[]> {
  const rows = await definitionRows(em, { object });
  return rows.map((row) => {
    const f = toDto(row as DefinitionRow);
    return {
      key: f.key,
      type: f.type,
      required: f.required,
      unique: f.unique,
      indexed: f.indexed,
      default: f.default,
      options: f.options,
      validation: f.validation,
      archived: f.archived,
    };
  });
}

export async function listCustomFields(
  em: EntityManager,
  object: CustomObject,
  includeArchived = false,
): Promise<CustomFieldDto[]> {
  const fields = (await definitionRows(em, { object })).map((row) => toDto(row as DefinitionRow));
  return includeArchived ? fields : fields.filter((f) => !f.archived);
}

async function findDefinition(em: EntityManager, object: CustomObject, key: string): Promise<DefinitionRow> {
  const row = await orgDb(em)
    .selectFrom('custom_fields')
    .select(definitionColumns)
    .where('object', '=', object)
    .where('key', '=', key)
    .executeTakeFirst();
  if (!row) throw notFound('Custom field');
  return row as DefinitionRow;
}

export async function getCustomField(em: EntityManager, object: CustomObject, key: string) {
  return toDto(await findDefinition(em, object, key));
}

/** Options as stored: each with its label (the value when none) and archived flag. */
function storedOptions(options: CustomFieldCreateInput['options']): CustomFieldOption[] {
  const seen = new Set<string>();
  return (options ?? []).map((o, i) => {
    if (seen.has(o.value)) throw invalid(`options[${i}].value: ${JSON.stringify(o.value)} is listed twice`);
    seen.add(o.value);
    return { value: o.value, label: o.label ?? o.value, archived: o.archived ?? false };
  });
}

/** The rules a definition must keep whatever its type: options for selects only, ranges for numbers, … */
function checkDefinition(rule: FieldRule): void {
  const { type, validation } = rule;
  if (SELECT_TYPES.has(type) && rule.options.filter((o) => !o.archived).length === 0)
    throw invalid(`options: a ${type} field needs at least one option`);
  if (!SELECT_TYPES.has(type) && rule.options.length > 0)
    throw invalid(`options: only select and multi_select fields take options, not ${type}`);
  if (!RANGED_TYPES.has(type) && (validation.min !== undefined || validation.max !== undefined))
    throw invalid(`validation: min and max apply to number and currency fields, not ${type}`);
  if (!TEXT_TYPES.has(type) && (validation.max_length !== undefined || validation.pattern !== undefined))
    throw invalid(`validation: max_length and pattern apply to text-like fields, not ${type}`);
  if (validation.pattern !== undefined) {
    try {
      compilePattern(validation.pattern);
    } catch (err) {
      throw invalid(`validation.pattern: not a regular expression RE2 can run (${(err as Error).message})`);
    }
  }
  if (rule.unique && !UNIQUE_TYPES.has(type))
    throw invalid(`unique: a ${type} field cannot be unique (only ${[...UNIQUE_TYPES].join(', ')})`);
  if (rule.indexed && !INDEXED_TYPES.has(type))
    throw invalid(`indexed: a ${type} field cannot be indexed (only ${[...INDEXED_TYPES].join(', ')})`);
  if (rule.default !== null && rule.default !== undefined) {
    if (rule.unique)
      throw invalid('default: a unique field cannot have a default (every record would share it)');
    rule.default = checkedValue(rule, rule.default, 'default');
  }
}

/** The rules a new field's definition gives, checked (a 400 naming what makes no sense). */
export function newFieldRule(input: CustomFieldCreateInput): FieldRule {
  const rule: FieldRule = {
    key: input.key,
    type: input.type,
    required: input.required ?? false,
    unique: input.unique ?? false,
    indexed: input.indexed ?? false,
    default: input.default ?? null,
    options: storedOptions(input.options),
    validation: input.validation ?? {},
    archived: false,
  };
  checkDefinition(rule);
  return rule;
}

export async function createCustomField(
  em: EntityManager,
  object: CustomObject,
  input: CustomFieldCreateInput,
): Promise<CustomFieldDto> {
  const rule = newFieldRule(input);
  return schemaChange(em, async (tx) => {
    // One schema change of an object at a time: the count and the position below stay exact.
    await lockSchema(tx, object);
    const existing = await definitionsOf(tx, object);
    const taken = existing.find((f) => f.key === input.key);
    if (taken)
      throw conflict(
        taken.archived_at
          ? `key: ${object}.${input.key} was archived; a key is never used again (choose another)`
          : `key: ${object} already has a custom field ${input.key}`,
      );
    if (existing.length >= CUSTOM_LIMITS.fieldsPerObject)
      throw conflict(
        `${object} has ${existing.length} custom fields, the limit (${CUSTOM_LIMITS.fieldsPerObject}, archived ones included)`,
      );
    if (rule.indexed) checkIndexLimit(object, existing);
    if (rule.required && rule.default === null) await requireEveryRecordHas(tx, object, rule.key);
    await sqlOf(tx)
      .insertInto('custom_fields')
      .values({
        org_id: currentOrg(tx),
        object,
        key: rule.key,
        label: input.label ?? rule.key,
        type: rule.type,
        required: rule.required,
        is_unique: rule.unique,
        is_indexed: rule.indexed,
        default_value: rule.default === null ? null : jsonb(rule.default),
        options: jsonb(rule.options),
        validation: jsonb(rule.validation),
        description: input.description ?? null,
        ai_hint: input.ai_hint ?? null,
        position: existing.length,
        created_at: new Date(),
      })
      .execute();
    return toDto(await findDefinition(tx, object, rule.key));
  });
}

export async function updateCustomField(
  em: EntityManager,
  object: CustomObject,
  key: string,
  input: CustomFieldUpdateInput,
): Promise<CustomFieldDto> {
  return schemaChange(em, async (tx) => {
    await lockSchema(tx, object);
    const row = await findDefinition(tx, object, key);
    if (row.archived_at) throw conflict(`${object}.${key} is archived: it changes no more`);
    const before = toDto(row);
    const rule: FieldRule = {
      key,
      type: before.type,
      required: input.required ?? before.required,
      unique: input.unique ?? before.unique,
      indexed: input.indexed ?? before.indexed,
      default: input.default === undefined ? before.default : input.default,
      options: input.options ? mergedOptions(before.options, storedOptions(input.options)) : before.options,
      validation: input.validation ?? before.validation,
      archived: false,
    };
    checkDefinition(rule);
    if (rule.required && rule.default === null && !before.required)
      await requireEveryRecordHas(tx, object, key);
    if (rule.unique && !before.unique) await claimExistingValues(tx, object, key);
    if (!rule.unique && before.unique) await dropKeptValues(tx, 'custom_unique_values', object, key);
    if (rule.indexed && !before.indexed) checkIndexLimit(object, await definitionsOf(tx, object));
    await orgDb(tx)
      .updateTable('custom_fields')
      .set({
        label: input.label ?? before.label,
        required: rule.required,
        is_unique: rule.unique,
        is_indexed: rule.indexed,
        default_value: rule.default === null ? null : jsonb(rule.default),
        options: jsonb(rule.options),
        validation: jsonb(rule.validation),
        description: input.description === undefined ? before.description : input.description,
        ai_hint: input.ai_hint === undefined ? before.ai_hint : input.ai_hint,
        updated_at: new Date(),
      })
      .where('object', '=', object)
      .where('key', '=', key)
      .execute();
    // After the definition: the records' index rows are written as the trigger writes them.
    if (rule.indexed && !before.indexed) await indexValues(tx, object, key);
    if (!rule.indexed && before.indexed) await dropKeptValues(tx, 'custom_indexed_values', object, key);
    return toDto(await findDefinition(tx, object, key));
  });
}

/** The new list, and each option it leaves out kept archived: values that hold it stay readable. */
function mergedOptions(before: CustomFieldOption[], sent: CustomFieldOption[]): CustomFieldOption[] {
  const kept = new Set(sent.map((o) => o.value));
  return [...sent, ...before.filter((o) => !kept.has(o.value)).map((o) => ({ ...o, archived: true }))];
}

/** DELETE: archived, its values kept (readable, in history and exports), its key never used again. */
export async function archiveCustomField(em: EntityManager, object: CustomObject, key: string) {
  return schemaChange(em, async (tx) => {
    await lockSchema(tx, object);
    const row = await findDefinition(tx, object, key);
    if (!row.archived_at) {
      if (row.is_unique) await dropKeptValues(tx, 'custom_unique_values', object, key);
      if (row.is_indexed) await dropKeptValues(tx, 'custom_indexed_values', object, key);
      await orgDb(tx)
        .updateTable('custom_fields')
        .set({ archived_at: new Date(), updated_at: new Date() })
        .where('object', '=', object)
        .where('key', '=', key)
        .execute();
    }
    return toDto(await findDefinition(tx, object, key));
  });
}

/**
 * Holds the object's schema and its records still while a change checks the records against it: a lock
 * per organization and object for schema changes (transaction-scoped), and the records' table in SHARE
 * mode, so no write lands between the check and the change (writes wait for the change, reads do not).
 */
async function lockSchema(tx: EntityManager, object: CustomObject): Promise<void> {
  await lockForOrg(tx, `custom_fields:${object}`);
}

async function lockRecords(tx: EntityManager, object: CustomObject): Promise<void> {
  await sql`lock table ${sql.table(object)} in share mode`.execute(orgDb(tx));
}

const FIRST_IDS = 5;

const MISSING = (key: string) =>
  sql<boolean>`jsonb_typeof(custom -> ${key}) is null or jsonb_typeof(custom -> ${key}) = 'null'`;
const HELD = (key: string) =>
  sql<boolean>`jsonb_typeof(custom -> ${key}) is distinct from 'null' and custom ? ${key}`;

/** How many records of `object` hold no value for `key`, and the first of them. */
export async function missingValues(tx: EntityManager, object: CustomObject, key: string) {
  const [counted, first] = await Promise.all([
    orgDb(tx)
      .selectFrom(object)
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where(MISSING(key))
      .executeTakeFirst(),
    orgDb(tx).selectFrom(object).select('id').where(MISSING(key)).orderBy('id').limit(FIRST_IDS).execute(),
  ]);
  const count = Number(counted?.n ?? 0);
  return count === 0
    ? undefined
    : {
        count,
        first: first.map((r) => r.id),
        message: `required: ${count} ${object} have no value for ${key} (first: ${first.map((r) => r.id).join(', ')}); give them one, or a default, first`,
      };
}

/** The values of `key` more than one record of `object` holds (the first few), with their holders. */
export async function duplicateValues(tx: EntityManager, object: CustomObject, key: string) {
  const duplicates = await orgDb(tx)
    .selectFrom(object)
    .select([sql<string>`custom ->> ${key}`.as('value'), sql<string[]>`array_agg(id order by id)`.as('ids')])
    .where(HELD(key))
    // By position: the value's expression, written again, would bind its key as another parameter.
    .groupBy(sql`1`)
    .having((eb) => eb.fn.countAll(), '>', 1)
    .limit(FIRST_IDS)
    .execute();
  const first = duplicates[0];
  if (!first) return undefined;
  const ids = asJson<string[]>(first.ids);
  return {
    count: duplicates.length,
    first: ids,
    message: `unique: ${duplicates.length}${duplicates.length === FIRST_IDS ? ' or more' : ''} values of ${key} are held by more than one of ${object} (first: ${JSON.stringify(first.value)} by ${ids.join(', ')})`,
  };
}

/** Making a field required: every record must already hold a value (409 with the count and first ids). */
async function requireEveryRecordHas(tx: EntityManager, object: CustomObject, key: string) {
  await lockRecords(tx, object);
  const missing = await missingValues(tx, object, key);
  if (missing) throw conflict(missing.message, missing.first[0]);
}

/** Making a field unique: its values must already be unique; they are then claimed as writes claim them. */
async function claimExistingValues(tx: EntityManager, object: CustomObject, key: string) {
  await lockRecords(tx, object);
  const duplicates = await duplicateValues(tx, object, key);
  if (duplicates) throw conflict(duplicates.message, duplicates.first[0]);
  // Claims left by a writer that committed while the field was being made non-unique: gone first.
  await dropKeptValues(tx, 'custom_unique_values', object, key);
  await sqlOf(tx)
    .insertInto('custom_unique_values')
    .columns(['org_id', 'object', 'key', 'value_hash', 'record_id'])
    .expression(
      orgDb(tx)
        .selectFrom(object)
        .select([
          'org_id',
          sql.val(object).as('object'),
          sql.val(key).as('key'),
          sql<Buffer>`sha256(convert_to(custom ->> ${key}, 'UTF8'))`.as('value_hash'),
          'id',
        ])
        .where(HELD(key)),
    )
    .execute();
}

/**
 * A field's kept rows, gone (its claims, unset or archived; its index rows, likewise): the records held
 * still, so no writer's row lands meanwhile and stays.
 */
async function dropKeptValues(
  tx: EntityManager,
  table: 'custom_unique_values' | 'custom_indexed_values',
  object: CustomObject,
  key: string,
) {
  await lockRecords(tx, object);
  await orgDb(tx).deleteFrom(table).where('object', '=', object).where('key', '=', key).execute();
}

/** The object's definitions, archived ones too: what its limits count. */
function definitionsOf(tx: EntityManager, object: CustomObject) {
  return orgDb(tx)
    .selectFrom('custom_fields')
    .select(['key', 'archived_at', 'is_indexed'])
    .where('object', '=', object)
    .execute();
}

/** One more indexed field: a 409 naming the limit when the object's active indexed fields are at it. */
function checkIndexLimit(
  object: CustomObject,
  definitions: ReadonlyArray<{ key: string; archived_at: unknown; is_indexed: boolean }>,
): void {
  const indexed = definitions.filter((f) => f.is_indexed && !f.archived_at).map((f) => f.key);
  if (indexed.length >= CUSTOM_LIMITS.indexedPerObject)
    throw conflict(
      `indexed: ${object} has ${indexed.length} indexed custom fields, the limit (${CUSTOM_LIMITS.indexedPerObject}); unset indexed on one of them first (${indexed.join(', ')})`,
    );
}

/**
 * A field made indexed (or converted while indexed): its rows in `custom_indexed_values` written for every
 * record holding a value, in one statement, by the SQL function the trigger writes a record's with
 * (`crm_custom_index_entries`, Migration20261203000100_custom_indexed_values). The records are held still
 * meanwhile, so no writer's rows land between the delete and the insert. One INSERT … SELECT: 200,000
 * records took 4-8 s on a busy machine, so a million takes longer than a request's statement timeout
 * (DATABASE_QUERY_TIMEOUT_MS, 10 s): cut off, nothing changes; `crm schema apply` waits for it
 * (docs/api/custom-fields.md).
 */
async function indexValues(tx: EntityManager, object: CustomObject, key: string) {
  await dropKeptValues(tx, 'custom_indexed_values', object, key);
  const { type } = await findDefinition(tx, object, key);
  // Each record's entries (a multi-select's one per option) as rows of one composite column, then spread.
  const entries = orgDb(tx)
    .selectFrom(object)
    .select(['org_id', 'id', sql<unknown>`crm_custom_index_entries(${type}, custom -> ${key})`.as('entry')])
    .where(HELD(key))
    .as('r');
  await sqlOf(tx)
    .insertInto('custom_indexed_values')
    .columns(['org_id', 'object', 'key', 'value_text', 'value_num', 'value_time', 'record_id'])
    .expression(
      orgDb(tx)
        .selectFrom(entries)
        .select([
          'r.org_id',
          sql.val(object).as('object'),
          sql.val(key).as('key'),
          sql<string | null>`(r.entry).value_text`.as('value_text'),
          sql<string | null>`(r.entry).value_num`.as('value_num'),
          sql<Date | null>`(r.entry).value_time`.as('value_time'),
          'r.id',
        ])
        // In the record index's order: its pages filled one after the other, not at random.
        .orderBy('r.id'),
    )
    .execute();
}

/**
 * The field a batch upserts on (`?upsert_on=`): an active unique field of `object`, or a 400 saying
 * which fields could be.
 */
export async function upsertField(em: EntityManager, object: CustomObject, key: string): Promise<FieldRule> {
  const rules = await fieldRules(em, object);
  const rule = rules.find((r) => r.key === key && !r.archived);
  if (rule?.unique) return rule;
  const unique = rules.filter((r) => r.unique && !r.archived).map((r) => r.key);
  throw invalid(
    `upsert_on: ${JSON.stringify(key)} is not a unique custom field of ${object} (${unique.length > 0 ? `its unique fields: ${unique.join(', ')}` : 'it has none: define one with unique: true'})`,
  );
}

/** The record of `object` that holds `value` (as stored) of the unique field `key`, if one does. */
export async function holderOf(
  em: EntityManager,
  object: CustomObject,
  key: string,
  value: unknown,
): Promise<string | undefined> {
  // As the trigger claims it: the SHA-256 of the value's text as PostgreSQL writes it (`custom ->> key`:
  // 1e21 is 1000000000000000000000 there, not JavaScript's 1e+21).
  const row = await orgDb(em)
    .selectFrom('custom_unique_values')
    .select('record_id')
    .where('object', '=', object)
    .where('key', '=', key)
    .where(
      'value_hash',
      '=',
      sql<Buffer>`sha256(convert_to(${JSON.stringify(value)}::jsonb #>> '{}', 'UTF8'))`,
    )
    .executeTakeFirst();
  return row?.record_id;
}

/** How many records a conversion reads, and writes, per statement. */
const CONVERT_PAGE = 1_000;
/** How many of the values that do not convert a conversion's answer shows. */
const FIRST_FAILURES = 10;

/** The rules of the field's validation that still apply to `type` (min/max to numbers, …). */
function keptValidation(validation: FieldRule['validation'], type: FieldType): FieldRule['validation'] {
  const { min, max, max_length, pattern } = validation;
  return {
    ...(RANGED_TYPES.has(type) ? { min, max } : {}),
    ...(TEXT_TYPES.has(type) ? { max_length, pattern } : {}),
  };
}

/**
 * `POST /custom-fields/{object}/{key}/convert` (docs/api/custom-fields.md: Converting a field): a type
 * change, with every value held converted by `convertedValue`. A dry run reports what would convert and the
 * first values that would not, and changes nothing. Applied, it is all or nothing: values that do not
 * convert refuse it (409 with their count and the first ids) unless `clear_unconvertible` clears them; the
 * definition changes, then the changed values are written a page at a time (the unique claims follow by
 * their trigger: two values that become one are the unique rule's 409). The schema and the records are
 * held still meanwhile, as other schema changes hold them. No record events: a conversion is a change of
 * the schema, as an archived option is.
 */
export async function convertCustomField(
  em: EntityManager,
  object: CustomObject,
  key: string,
  input: CustomFieldConvertInput,
): Promise<CustomFieldConversionDto> {
  return schemaChange(em, async (tx) => {
    await lockSchema(tx, object);
    const row = await findDefinition(tx, object, key);
    if (row.archived_at) throw conflict(`${object}.${key} is archived: it changes no more`);
    const before = toDto(row);
    const rule: FieldRule = {
      key,
      type: input.type,
      required: before.required,
      unique: before.unique,
      indexed: before.indexed,
      default: null,
      options: input.options
        ? storedOptions(input.options)
        : SELECT_TYPES.has(input.type) && SELECT_TYPES.has(before.type)
          ? before.options
          : [],
      validation: input.validation ?? keptValidation(before.validation, input.type),
      archived: false,
    };
    if (before.default !== null) {
      const converted = convertedValue(before.default, rule);
      if ('reason' in converted)
        throw invalid(
          `default: ${JSON.stringify(before.default)} does not convert to ${input.type} (${converted.reason}); remove the default first (PATCH with default: null)`,
        );
      rule.default = converted.value;
    }
    checkDefinition(rule);
    if (!input.dry_run) await lockRecords(tx, object);

    const report = {
      records: 0,
      converted: 0,
      failures: [] as Array<{ id: string; value: unknown; reason: string }>,
    };
    const changed = new Map<string, unknown>();
    const failed: string[] = [];
    for (let after: string | undefined; ; ) {
      let page = orgDb(tx)
        .selectFrom(object)
        .select(['id', sql<unknown>`jsonb_build_array(custom -> ${key})`.as('held')])
        .where(HELD(key));
      if (after) page = page.where('id', '>', after);
      const rows = await page.orderBy('id').limit(CONVERT_PAGE).execute();
      for (const { id, held } of rows) {
        const [value] = asJson<unknown[]>(held);
        report.records++;
        const converted = convertedValue(value, rule);
        if ('reason' in converted) {
          failed.push(id);
          if (report.failures.length < FIRST_FAILURES)
            report.failures.push({ id, value, reason: converted.reason });
          continue;
        }
        report.converted++;
        if (JSON.stringify(converted.value) !== JSON.stringify(value)) changed.set(id, converted.value);
      }
      after = rows.at(-1)?.id;
      if (rows.length < CONVERT_PAGE) break;
    }
    const answer = {
      object,
      key,
      from: before.type,
      to: input.type,
      dry_run: input.dry_run ?? false,
      applied: false,
      records: report.records,
      converted: report.converted,
      changed: changed.size,
      failed: failed.length,
      failures: report.failures,
    };
    if (input.dry_run) return answer;
    if (failed.length > 0 && !input.clear_unconvertible)
      throw conflict(
        `type: ${failed.length} ${object} hold values of ${key} that do not convert to ${input.type} (first: ${report.failures
          .slice(0, 5)
          .map((f) => `${f.id} ${JSON.stringify(f.value)}: ${f.reason}`)
          .join('; ')}); change or clear them, or send clear_unconvertible: true to clear them`,
        failed[0],
      );
    if (failed.length > 0 && rule.required)
      throw conflict(
        `required: clearing the ${failed.length} values that do not convert would leave ${object} without a value of the required field ${key} (first: ${failed.slice(0, 5).join(', ')})`,
        failed[0],
      );
    await orgDb(tx)
      .updateTable('custom_fields')
      .set({
        type: rule.type,
        default_value: rule.default === null ? null : jsonb(rule.default),
        options: jsonb(rule.options),
        validation: jsonb(rule.validation),
        updated_at: new Date(),
      })
      .where('object', '=', object)
      .where('key', '=', key)
      .execute();
    const ids = [...changed.keys()];
    for (let i = 0; i < ids.length; i += CONVERT_PAGE) {
      const pageIds = ids.slice(i, i + CONVERT_PAGE);
      const values = Object.fromEntries(pageIds.map((id) => [id, changed.get(id)]));
      // Each record's new value looked up by its id in one JSON object: one statement per page.
      await orgDb(tx)
        .updateTable(object)
        .set({
          custom: sql`jsonb_set(custom, array[${key}]::text[], ${JSON.stringify(values)}::jsonb -> id::text)`,
        } as never)
        .where('id', 'in', pageIds)
        .execute();
    }
    for (let i = 0; i < failed.length; i += CONVERT_PAGE)
      await orgDb(tx)
        .updateTable(object)
        .set({ custom: sql`custom - ${key}` } as never)
        .where('id', 'in', failed.slice(i, i + CONVERT_PAGE))
        .execute();
    // A value whose JSON the conversion left as it was ("2027-01-31" from text to date) is held otherwise
    // by the new type's index: every row of the field again.
    if (rule.indexed) await indexValues(tx, object, key);
    return { ...answer, applied: true, field: toDto(await findDefinition(tx, object, key)) };
  });
}
