import type { EntityManager } from '@crm/db';
import { sql } from 'kysely';
import { z } from 'zod';
import { ApiError, describeZodIssues } from '../../errors.ts';
import { canonicalJson } from '../../idempotency.ts';
import { orgDb } from '../../org-scope.ts';
import {
  CUSTOM_LIMITS,
  CUSTOM_OBJECTS,
  CustomField,
  CustomFieldConversion,
  CustomFieldCreateInput,
  type CustomFieldDto,
  type CustomObject,
} from './custom-field.schemas.ts';
import {
  archiveCustomField,
  convertCustomField,
  createCustomField,
  duplicateValues,
  listCustomFields,
  missingValues,
  newFieldRule,
  schemaChange,
  updateCustomField,
} from './custom-fields.service.ts';

/**
 * An organization's custom fields as a file kept in its repository (`crm schema export > crm.schema.json`):
 * per object, its active fields as a create takes them. An object the file leaves out is not touched; an
 * object listed with `[]` has every field archived.
 */
export const SchemaFile = z
  .strictObject({
    version: z.literal(1).describe('The format of this file: 1'),
    objects: z.strictObject(
      Object.fromEntries(
        CUSTOM_OBJECTS.map((o) => [
          o,
          z.array(CustomFieldCreateInput).max(CUSTOM_LIMITS.fieldsPerObject).optional(),
        ]),
      ) as Record<CustomObject, z.ZodOptional<z.ZodArray<typeof CustomFieldCreateInput>>>,
    ),
  })
  .meta({
    id: 'CustomFieldSchemaFile',
    examples: [
      {
        version: 1,
        objects: {
          deals: [
            { key: 'arr', label: 'ARR', type: 'currency', validation: { min: 0 }, ai_hint: 'metrics' },
            {
              key: 'region',
              type: 'select',
              required: true,
              options: [{ value: 'emea' }, { value: 'apac' }],
            },
          ],
        },
      },
    ],
  });
export type SchemaFile = z.infer<typeof SchemaFile>;

/**
 * A schema file's text (`crm schema export` wrote it) read as JSON and checked: the file, or a 400
 * `invalid_request` naming what is wrong where (`not JSON: …`, `objects.deals[0].key: …`). The CLI reads a
 * file and the dashboard a pasted text through this one function.
 */
export function parseSchemaFile(text: string): SchemaFile {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ApiError('invalid_request', `not JSON: ${(err as Error).message}`);
  }
  const parsed = SchemaFile.safeParse(json);
  if (!parsed.success) throw new ApiError('invalid_request', describeZodIssues(parsed.error.issues));
  return parsed.data;
}

const Attribute = z.object({ from: z.unknown(), to: z.unknown() });

export const SchemaStep = z.object({
  object: z.enum(CUSTOM_OBJECTS),
  key: z.string(),
  action: z.enum(['add', 'change', 'convert', 'archive']),
  changes: z
    .record(z.string(), Attribute)
    .optional()
    .describe('change, convert: each attribute that changes (a convert is a change of `type`)'),
  conversion: CustomFieldConversion.pick({
    records: true,
    converted: true,
    changed: true,
    failed: true,
    failures: true,
  })
    .optional()
    .describe('convert: what a dry run of the conversion found (POST /custom-fields/{object}/{key}/convert)'),
  records_with_values: z
    .number()
    .int()
    .optional()
    .describe('archive: how many records hold a value (they keep it, readable)'),
  index: z
    .object({
      action: z
        .enum(['build', 'drop', 'rebuild'])
        .describe(
          'build: the field becomes indexed; drop: it no longer is (or is archived); rebuild: a convert',
        ),
      records: z
        .number()
        .int()
        .describe('The records whose index rows are written (build, rebuild) or removed (drop)'),
    })
    .optional()
    .describe('What the step does to the field’s index (`indexed`), and how many records that touches'),
  problem: z.string().optional().describe('Why this step cannot be applied as the data stands'),
});
export type SchemaStep = z.infer<typeof SchemaStep>;

export const SchemaPlan = z
  .object({
    steps: z.array(SchemaStep),
    applicable: z.boolean().describe('No step has a problem: apply would make every step'),
  })
  .meta({ id: 'CustomFieldSchemaPlan' });
export type SchemaPlan = z.infer<typeof SchemaPlan>;

export const SchemaApplied = SchemaPlan.extend({
  fields: z.array(CustomField).describe('Every field of the objects the file names, after the apply'),
}).meta({ id: 'CustomFieldSchemaApplied' });

/** A field as the file states it: what a create of it takes, defaults left out. */
function asFileField(f: CustomFieldDto): CustomFieldCreateInput {
  return {
    key: f.key,
    type: f.type,
    label: f.label,
    ...(f.required ? { required: true } : {}),
    ...(f.unique ? { unique: true } : {}),
    ...(f.indexed ? { indexed: true } : {}),
    ...(f.default !== null && f.default !== undefined ? { default: f.default } : {}),
    ...(f.options.length > 0
      ? { options: f.options.filter((o) => !o.archived).map(({ value, label }) => ({ value, label })) }
      : {}),
    ...(Object.keys(f.validation).length > 0 ? { validation: f.validation } : {}),
    ...(f.description ? { description: f.description } : {}),
    ...(f.ai_hint ? { ai_hint: f.ai_hint } : {}),
  };
}

export async function exportSchema(em: EntityManager): Promise<SchemaFile> {
  const objects: SchemaFile['objects'] = {};
  for (const object of CUSTOM_OBJECTS)
    objects[object] = (await listCustomFields(em, object)).map(asFileField);
  return { version: 1, objects };
}

/** The attributes a file's field changes on the stored one, compared as the file states them. */
function changedAttributes(stored: CustomFieldDto, wanted: CustomFieldCreateInput) {
  const now = asFileField(stored) as Record<string, unknown>;
  const next = { ...asFileField({ ...stored, ...toDtoShape(wanted) }) } as Record<string, unknown>;
  const changes: Record<string, { from: unknown; to: unknown }> = {};
  for (const attr of new Set([...Object.keys(now), ...Object.keys(next)])) {
    if (attr === 'key') continue;
    // Keys in any order: a stored validation reads back in the database's order ({max, min}), a file's
    // in the schema's ({min, max}), and the same rules are no change.
    if (canonicalJson(now[attr] ?? null) !== canonicalJson(next[attr] ?? null))
      changes[attr] = { from: now[attr] ?? null, to: next[attr] ?? null };
  }
  return changes;
}

/** A file's field in the stored field's shape (what it leaves out: the defaults a create gives). */
function toDtoShape(f: CustomFieldCreateInput): Partial<CustomFieldDto> {
  return {
    type: f.type,
    label: f.label ?? f.key,
    required: f.required ?? false,
    unique: f.unique ?? false,
    indexed: f.indexed ?? false,
    default: f.default ?? null,
    options: (f.options ?? []).map((o) => ({ value: o.value, label: o.label ?? o.value, archived: false })),
    validation: f.validation ?? {},
    description: f.description ?? null,
    ai_hint: f.ai_hint ?? null,
  };
}

/**
 * What applying `file` would do, and what of the data each step touches or breaks: fields to add, to
 * change (attribute by attribute) and to archive; a required or unique rule the records break, a type
 * change, or a key that was archived is a step's problem, and the plan is then not applicable.
 */
export async function planSchema(em: EntityManager, file: SchemaFile): Promise<SchemaPlan> {
  const steps: SchemaStep[] = [];
  for (const object of CUSTOM_OBJECTS) {
    const wanted = file.objects[object];
    if (!wanted) continue;
    const indexed = wanted.filter((f) => f.indexed).length;
    if (indexed > CUSTOM_LIMITS.indexedPerObject)
      throw new ApiError(
        'invalid_request',
        `objects.${object}: ${indexed} fields are indexed, over the limit of ${CUSTOM_LIMITS.indexedPerObject} per object`,
      );
    const stored = await listCustomFields(em, object, true);
    const byKey = new Map(stored.map((f) => [f.key, f]));
    const seen = new Set<string>();
    for (const [i, field] of wanted.entries()) {
      if (seen.has(field.key))
        throw new ApiError('invalid_request', `objects.${object}[${i}].key: ${field.key} is listed twice`);
      seen.add(field.key);
      const rule = definitionOf(field, `objects.${object}[${i}]`);
      const current = byKey.get(field.key);
      const step: SchemaStep = current
        ? { object, key: field.key, action: 'change', changes: changedAttributes(current, field) }
        : { object, key: field.key, action: 'add' };
      if (current?.archived) step.problem = `${field.key} was archived; a key is never used again`;
      else if (current && current.type !== field.type) {
        step.action = 'convert';
        step.problem = await convertProblem(em, step, field);
      } else {
        const newlyRequired = rule.required && rule.default === null && !current?.required;
        const newlyUnique = rule.unique && !current?.unique;
        const broken =
          (newlyRequired ? await missingValues(em, object, field.key) : undefined) ??
          (newlyUnique ? await duplicateValues(em, object, field.key) : undefined);
        if (broken) step.problem = broken.message;
      }
      if (!current?.archived) {
        const wasIndexed = current?.indexed ?? false;
        const indexedNow = rule.indexed;
        // A new key holds no value: writes refuse a key no field defines.
        if (indexedNow && !current) step.index = { action: 'build', records: 0 };
        else if (indexedNow && !wasIndexed)
          step.index = { action: 'build', records: await heldCount(em, object, field.key) };
        else if (!indexedNow && wasIndexed)
          step.index = { action: 'drop', records: await indexedCount(em, object, field.key) };
        else if (indexedNow && step.action === 'convert')
          step.index = { action: 'rebuild', records: step.conversion?.records ?? 0 };
      }
      if (step.action === 'change' && Object.keys(step.changes ?? {}).length === 0 && !step.problem) continue;
      steps.push(step);
    }
    for (const field of stored)
      if (!field.archived && !seen.has(field.key)) {
        const missing = await missingValues(em, object, field.key);
        const total = await countRecords(em, object);
        steps.push({
          object,
          key: field.key,
          action: 'archive',
          records_with_values: total - (missing?.count ?? 0),
          ...(field.indexed && {
            index: { action: 'drop' as const, records: await indexedCount(em, object, field.key) },
          }),
        });
      }
  }
  return { steps, applicable: steps.every((s) => !s.problem) };
}

/**
 * A type change's dry run, kept on its step (`conversion`), and why it cannot be applied: values that do
 * not convert (apply refuses them; the convert operation can clear them) or a definition the new type
 * cannot have.
 */
async function convertProblem(
  em: EntityManager,
  step: SchemaStep,
  field: CustomFieldCreateInput,
): Promise<string | undefined> {
  try {
    const { records, converted, changed, failed, failures } = await convertCustomField(
      em,
      step.object,
      step.key,
      {
        type: field.type,
        options: field.options ?? [],
        validation: field.validation ?? {},
        dry_run: true,
      },
    );
    step.conversion = { records, converted, changed, failed, failures };
    if (failed === 0) return undefined;
    return `${failed} values do not convert to ${field.type} (first: ${failures
      .slice(0, 5)
      .map((f) => `${f.id} ${JSON.stringify(f.value)}: ${f.reason}`)
      .join(
        '; ',
      )}); change them, or convert with clear_unconvertible (POST /custom-fields/${step.object}/${step.key}/convert)`;
  } catch (err) {
    if (err instanceof ApiError) return err.message;
    throw err;
  }
}

/** A field of the file checked as a create checks it, its errors named by where they are in the file. */
function definitionOf(field: CustomFieldCreateInput, at: string) {
  try {
    return newFieldRule(field);
  } catch (err) {
    if (err instanceof ApiError) throw new ApiError(err.code, `${at}.${err.message}`);
    throw err;
  }
}

/** How many records of `object` hold a value of `key`: the rows an index of it is built from. */
async function heldCount(em: EntityManager, object: CustomObject, key: string): Promise<number> {
  const total = await countRecords(em, object);
  return total - ((await missingValues(em, object, key))?.count ?? 0);
}

/** How many records an indexed field's index holds (read from the index alone). */
async function indexedCount(em: EntityManager, object: CustomObject, key: string): Promise<number> {
  const row = await orgDb(em)
    .selectFrom('custom_indexed_values')
    .select(sql<string>`count(distinct record_id)`.as('n'))
    .where('object', '=', object)
    .where('key', '=', key)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

async function countRecords(em: EntityManager, object: CustomObject): Promise<number> {
  const row = await orgDb(em)
    .selectFrom(object)
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/**
 * Applies `file` in one transaction: every step of its plan, or none (409 `conflict` naming the first
 * step's problem, with the plan's other problems). Returns the plan and the fields as they now are.
 */
export async function applySchema(em: EntityManager, file: SchemaFile) {
  return schemaChange(em, async (tx) => {
    const plan = await planSchema(tx, file);
    const problems = plan.steps.filter((s) => s.problem);
    if (problems.length > 0)
      throw new ApiError(
        'conflict',
        problems.map((s) => `objects.${s.object}.${s.key}: ${s.problem}`).join('; '),
      );
    // Steps that drop an index first: a file that moves an index from one field to another at the limit
    // of indexed fields stays within it.
    const ordered = [
      ...plan.steps.filter((s) => s.index?.action === 'drop'),
      ...plan.steps.filter((s) => s.index?.action !== 'drop'),
    ];
    for (const step of ordered) {
      const field = file.objects[step.object]?.find((f) => f.key === step.key);
      if (step.action === 'add' && field) await createCustomField(tx, step.object, field);
      if (step.action === 'convert' && field)
        await convertCustomField(tx, step.object, step.key, {
          type: field.type,
          options: field.options ?? [],
          validation: field.validation ?? {},
        });
      if ((step.action === 'change' || step.action === 'convert') && field) {
        const { key: _key, type: _type, ...rest } = field;
        const shape = toDtoShape(field);
        await updateCustomField(tx, step.object, step.key, {
          ...rest,
          label: shape.label,
          required: shape.required,
          unique: shape.unique,
          indexed: shape.indexed,
          default: shape.default,
          options: field.options ?? [],
          validation: shape.validation,
          description: shape.description,
          ai_hint: shape.ai_hint,
        });
      }
      if (step.action === 'archive') await archiveCustomField(tx, step.object, step.key);
    }
    const fields: CustomFieldDto[] = [];
    for (const object of CUSTOM_OBJECTS)
      if (file.objects[object]) fields.push(...(await listCustomFields(tx, object)));
    return { ...plan, fields };
  });
}
