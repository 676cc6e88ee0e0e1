import { z } from 'zod';
import { DateTimeOut, ShortText, Text } from '../../schemas.ts';

/** The records that carry custom fields: the one list. */
export const CUSTOM_OBJECTS = ['deals', 'contacts', 'companies'] as const;
export type CustomObject = (typeof CUSTOM_OBJECTS)[number];

export const FIELD_TYPES = [
  'text',
  'long_text',
  'number',
  'currency',
  'boolean',
  'date',
  'datetime',
  'select',
  'multi_select',
  'email',
  'url',
  'phone',
  'json',
] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

/** The limits of an organization's schema and of a record's values (docs/api/custom-fields.md). */
export const CUSTOM_LIMITS = {
  fieldsPerObject: 200,
  /** Active fields with `indexed: true`: each costs every write of the object a row per value. */
  indexedPerObject: 20,
  optionsPerSelect: 500,
  /** The JSON text of one record's `custom`. */
  valueBytesPerRecord: 32 * 1024,
} as const;

/** What a MEDDPICC pillar the field informs: the AI cites it as evidence for that pillar. */
export const AI_HINTS = [
  'metrics',
  'economic_buyer',
  'decision_criteria',
  'decision_process',
  'paper_process',
  'identify_pain',
  'champion',
  'competition',
] as const;

export const FieldKey = z
  .string()
  .regex(
    /^[a-z][a-z0-9_]{0,39}$/,
    'must be snake_case: a lower-case letter, then lower-case letters, digits or _, 1-40 characters',
  );

const ObjectParam = z.enum(CUSTOM_OBJECTS).describe('The records the field is on');

export const ObjectPath = z.strictObject({ object: ObjectParam });
export const FieldPath = z.strictObject({ object: ObjectParam, key: FieldKey });

const OptionValue = Text().trim().min(1).max(100);
const Option = z.strictObject({
  value: OptionValue,
  label: Text().trim().min(1).max(200).optional().describe('Shown to people; the value when left out'),
  archived: z.boolean().optional().describe('An archived option stays readable but is refused in writes'),
});

const Validation = z
  .strictObject({
    min: z.number().optional().describe('number, currency: the smallest value'),
    max: z.number().optional().describe('number, currency: the largest value'),
    max_length: z.number().int().min(1).max(CUSTOM_LIMITS.valueBytesPerRecord).optional(),
    pattern: Text()
      .max(500)
      .optional()
      .describe(
        'text-like types: a regular expression (RE2 syntax, run in linear time) the value must match',
      ),
  })
  .refine((v) => v.min === undefined || v.max === undefined || v.min <= v.max, 'min must not exceed max');

const DefinitionFields = {
  label: Text().trim().min(1).max(200),
  required: z.boolean().describe('A create without the field (and with no default) is refused'),
  unique: z
    .boolean()
    .describe('No two records of the object hold the same value (409 naming the record that holds it)'),
  indexed: z
    .boolean()
    .describe(
      'Filters on the field are served by an index (eq, in, ranges, has_any, has_all; docs/api/query.md): not long_text or json, at most 20 per object. Turned on, the records already holding a value are indexed in the same change',
    ),
  default: z.unknown().describe('Given to a created record that leaves the field out'),
  options: z.array(Option).max(CUSTOM_LIMITS.optionsPerSelect),
  validation: Validation,
  description: ShortText,
  ai_hint: z.enum(AI_HINTS).describe('The MEDDPICC pillar the field is evidence for'),
};

export const CustomFieldCreateInput = z
  .strictObject({
    key: FieldKey.describe('Chosen by you, immutable: how the value is named under `custom`'),
    type: z.enum(FIELD_TYPES),
    label: DefinitionFields.label.optional().describe('Shown to people; the key when left out'),
    required: DefinitionFields.required.optional(),
    unique: DefinitionFields.unique.optional(),
    indexed: DefinitionFields.indexed.optional(),
    default: DefinitionFields.default.optional(),
    options: DefinitionFields.options.optional().describe('select, multi_select: the allowed values'),
    validation: DefinitionFields.validation.optional(),
    description: DefinitionFields.description.optional(),
    ai_hint: DefinitionFields.ai_hint.optional(),
  })
  .meta({
    id: 'CustomFieldCreateRequest',
    examples: [
      { key: 'arr', label: 'ARR', type: 'currency', validation: { min: 0 } },
      {
        key: 'region',
        type: 'select',
        required: true,
        indexed: true,
        options: [{ value: 'emea' }, { value: 'apac' }, { value: 'amer' }],
      },
    ],
  });
export type CustomFieldCreateInput = z.infer<typeof CustomFieldCreateInput>;

export const CustomFieldUpdateInput = z
  .strictObject({
    label: DefinitionFields.label.optional(),
    required: DefinitionFields.required.optional(),
    unique: DefinitionFields.unique.optional(),
    indexed: DefinitionFields.indexed.optional(),
    default: DefinitionFields.default.optional().describe('null removes the default'),
    options: DefinitionFields.options
      .optional()
      .describe('The whole list: an option left out is archived (values stay readable), never deleted'),
    validation: DefinitionFields.validation.optional(),
    description: DefinitionFields.description.nullable().optional(),
    ai_hint: DefinitionFields.ai_hint.nullable().optional(),
  })
  .meta({
    id: 'CustomFieldUpdateRequest',
    // The body of PATCH /custom-fields/{object}/{key}: the router adds the path's parameters, which drops
    // this meta, and repeats it.
    examples: [{ label: 'Annual recurring revenue', required: true }],
  });
export type CustomFieldUpdateInput = z.infer<typeof CustomFieldUpdateInput>;

export const CustomFieldOption = z.object({ value: z.string(), label: z.string(), archived: z.boolean() });
export type CustomFieldOption = z.infer<typeof CustomFieldOption>;

export const CustomField = z
  .object({
    object: z.enum(CUSTOM_OBJECTS),
    key: z.string(),
    label: z.string(),
    type: z.enum(FIELD_TYPES),
    required: z.boolean(),
    unique: z.boolean(),
    indexed: z
      .boolean()
      .describe(
        'Filters on the field are served by an index (an archived field keeps the flag, its index is dropped)',
      ),
    default: z.unknown().describe('Given to a created record that leaves the field out; null for none'),
    options: z.array(CustomFieldOption),
    validation: z.object({
      min: z.number().optional(),
      max: z.number().optional(),
      max_length: z.number().int().optional(),
      pattern: z.string().optional(),
    }),
    description: z.string().nullable(),
    ai_hint: z.enum(AI_HINTS).nullable(),
    archived: z.boolean().describe('Archived: no longer written, its values still read; the key stays taken'),
    created_at: DateTimeOut,
    updated_at: DateTimeOut.nullable(),
  })
  .meta({ id: 'CustomField' });
export type CustomFieldDto = z.infer<typeof CustomField>;

export const CustomFieldConvertInput = z
  .strictObject({
    type: z.enum(FIELD_TYPES).describe('The type the field and its values become'),
    options: DefinitionFields.options
      .optional()
      .describe('select, multi_select: the allowed values (default: the field’s own options, or none)'),
    validation: DefinitionFields.validation
      .optional()
      .describe('The new type’s rules (default: the field’s own where they still apply, else none)'),
    dry_run: z
      .boolean()
      .optional()
      .describe('Only report what would convert and what would not; change nothing (default false)'),
    clear_unconvertible: z
      .boolean()
      .optional()
      .describe(
        'Apply even when some values do not convert: those values are cleared (default false: a 409 naming them)',
      ),
  })
  .meta({
    id: 'CustomFieldConvertRequest',
    examples: [{ type: 'number', dry_run: true }],
  });
export type CustomFieldConvertInput = z.infer<typeof CustomFieldConvertInput>;

export const CustomFieldConversion = z
  .object({
    object: z.enum(CUSTOM_OBJECTS),
    key: z.string(),
    from: z.enum(FIELD_TYPES),
    to: z.enum(FIELD_TYPES),
    dry_run: z.boolean(),
    applied: z.boolean().describe('Whether the field and its values were changed'),
    records: z.number().int().describe('Records holding a value of the field'),
    converted: z.number().int().describe('Values that convert (those already the new type’s included)'),
    changed: z.number().int().describe('Values whose stored form the conversion changes'),
    failed: z
      .number()
      .int()
      .describe('Values that do not convert (cleared when applied with clear_unconvertible)'),
    failures: z
      .array(z.object({ id: z.string(), value: z.unknown(), reason: z.string() }))
      .describe('The first records (by id, at most 10) whose value does not convert, and why'),
    field: CustomField.optional().describe('The field as it is after the conversion (applied only)'),
  })
  .meta({ id: 'CustomFieldConversion' });
export type CustomFieldConversionDto = z.infer<typeof CustomFieldConversion>;

export const CustomFieldListQuery = z.strictObject({
  object: ObjectParam,
  include_archived: z
    .preprocess((v) => (v === 'true' ? true : v === 'false' ? false : v), z.boolean())
    .optional()
    .describe('Also list archived fields'),
});

/**
 * A record's custom values as a write sends them: checked against the organization's fields by the
 * service (the fields are the organization's, not the document's). `null` clears a value in a PATCH.
 */
export const CustomValuesInput = z
  .record(z.string(), z.unknown())
  .describe(
    'Values of the organization’s custom fields by key (GET /custom-fields/{object} lists them); in a PATCH, only the keys sent change and null clears one',
  );

/**
 * A record's custom values as answered: every key it holds, archived fields' too. Checked as an object and
 * no further: they were checked when written, and a record's schema (`z.record`) runs a schema for each key
 * and each value of every record answered, 0.19 ms a page of 50 deals of 20 values, a quarter of what the
 * values add to the list (docs/development.md, custom fields in `npm run bench`). Documented as that record
 * all the same (OpenAPI, MCP's output schemas, the client's types): zod's `toJSONSchema` override.
 */
export const CustomValues = z.custom<Record<string, unknown>>(
  (v) => typeof v === 'object' && v !== null && !Array.isArray(v),
  'expected an object of custom values',
);
// The description here, not by .describe(): that makes a copy, which the override does not reach.
CustomValues._zod.toJSONSchema = () => ({
  type: 'object',
  propertyNames: { type: 'string' },
  additionalProperties: {},
  description: 'Values of the organization’s custom fields by key',
});
