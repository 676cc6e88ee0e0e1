import { RE2JS } from 're2js';
import { z } from 'zod';
import { nearest } from '../../did-you-mean.ts';
import { ApiError, describeZodIssues } from '../../errors.ts';
import { asText, DateTime } from '../../schemas.ts';
import {
  CUSTOM_LIMITS,
  type CustomFieldOption,
  type CustomObject,
  type FieldType,
} from './custom-field.schemas.ts';

/** A field as a write checks its values against. */
export interface FieldRule {
  key: string;
  type: FieldType;
  required: boolean;
  unique: boolean;
  indexed: boolean;
  default: unknown;
  options: CustomFieldOption[];
  validation: { min?: number; max?: number; max_length?: number; pattern?: string };
  archived: boolean;
}

/** The types whose values can be held unique (one value of a scalar each). */
export const UNIQUE_TYPES: ReadonlySet<FieldType> = new Set([
  'text',
  'number',
  'currency',
  'date',
  'datetime',
  'email',
  'url',
  'phone',
  'select',
]);
/**
 * The types an index can serve (`indexed: true`): a scalar compared whole, or a multi-select's options one
 * by one. Not long_text (compared by contains, which an index of whole values does not serve) nor json
 * (only is_null).
 */
export const INDEXED_TYPES: ReadonlySet<FieldType> = new Set([
  'text',
  'email',
  'url',
  'phone',
  'select',
  'multi_select',
  'number',
  'currency',
  'date',
  'datetime',
  'boolean',
]);
/** The types `validation.min`/`max` apply to, and those `max_length`/`pattern` apply to. */
export const RANGED_TYPES: ReadonlySet<FieldType> = new Set(['number', 'currency']);
export const TEXT_TYPES: ReadonlySet<FieldType> = new Set(['text', 'long_text', 'email', 'url', 'phone']);
export const SELECT_TYPES: ReadonlySet<FieldType> = new Set(['select', 'multi_select']);

/** A text field's length when its validation names none. */
const DEFAULT_MAX_LENGTH: Partial<Record<FieldType, number>> = {
  text: 1_000,
  long_text: CUSTOM_LIMITS.valueBytesPerRecord,
  email: 320,
  url: 2_000,
  phone: 32,
};

const activeOptions = (rule: FieldRule) => rule.options.filter((o) => !o.archived).map((o) => o.value);

function optionOf(rule: FieldRule) {
  const allowed = activeOptions(rule);
  return z.string().refine((v) => allowed.includes(v), {
    message: `must be one of ${allowed.map((v) => JSON.stringify(v)).join(', ') || '(no options)'}`,
  });
}

/** The pattern as a linear-time (RE2) matcher: a field's pattern is a client's, and must not stall a write. */
export function compilePattern(pattern: string): RE2JS {
  return RE2JS.compile(pattern);
}

/** The zod schema of one field's value, normalizing it as stored (an e-mail lower-cased, a date-time in UTC). */
function valueSchema(rule: FieldRule): z.ZodType {
  const { min, max, pattern } = rule.validation;
  const ranged = (n: z.ZodNumber) => {
    let s = n;
    if (min !== undefined) s = s.min(min);
    if (max !== undefined) s = s.max(max);
    return s;
  };
  // z.email() and z.url() are string formats: the same length and pattern rules apply.
  const texted = (s: z.ZodString | z.ZodStringFormat): z.ZodType<string> => {
    let t = (s as z.ZodString).max(rule.validation.max_length ?? DEFAULT_MAX_LENGTH[rule.type] ?? 1_000);
    if (pattern) {
      const re = compilePattern(pattern);
      t = t.refine(
        (v) => re.matcher(v).find(),
        `must match the pattern ${pattern}`,
      ) as unknown as z.ZodString;
    }
    return asText(t);
  };
  switch (rule.type) {
    case 'text':
    case 'long_text':
      return texted(z.string());
    case 'phone':
      return texted(z.string().regex(/^\+?[0-9][0-9 ()./-]{2,31}$/, 'must be a phone number'));
    case 'email':
      return texted(z.email()).transform((v) => v.toLowerCase());
    case 'url':
      return texted(z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }));
    case 'number':
      return ranged(z.number());
    case 'currency':
      return ranged(z.number()).refine((v) => Number(v.toFixed(2)) === v, 'at most 2 decimal places');
    case 'boolean':
      return z.boolean();
    case 'date':
      return z.iso.date();
    case 'datetime':
      return DateTime.transform((v) => new Date(v).toISOString());
    case 'select':
      return optionOf(rule);
    case 'multi_select':
      return z
        .array(optionOf(rule))
        .max(CUSTOM_LIMITS.optionsPerSelect)
        .refine((v) => new Set(v).size === v.length, 'must not repeat a value');
    case 'json':
      return z.unknown().superRefine((value, ctx) => {
        const problem = jsonProblem(value);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      });
  }
}

/** How deep a `json` value may nest: deep enough for any record, shallow enough for every reader. */
const JSON_MAX_DEPTH = 32;

/**
 * Why `value` cannot be stored as a `json` field's value, or undefined: walked with a stack of its own (a
 * recursive check overflowed at ~2,000 levels, a 500), each string and key held to the text rules.
 */
function jsonProblem(value: unknown): string | undefined {
  const stack: Array<[unknown, number]> = [[value, 0]];
  const badText = (t: string) =>
    t.includes('\u0000')
      ? 'must not contain NUL characters'
      : t.isWellFormed()
        ? undefined
        : 'must be valid Unicode text';
  while (stack.length > 0) {
    const [v, depth] = stack.pop() as [unknown, number];
    if (depth > JSON_MAX_DEPTH) return `nests deeper than ${JSON_MAX_DEPTH} levels`;
    if (v === null || typeof v === 'boolean') continue;
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) return 'must be JSON (a finite number)';
      continue;
    }
    if (typeof v === 'string') {
      const bad = badText(v);
      if (bad) return bad;
      continue;
    }
    if (Array.isArray(v)) {
      for (const item of v) stack.push([item, depth + 1]);
      continue;
    }
    if (typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
      for (const [k, item] of Object.entries(v)) {
        const bad = badText(k);
        if (bad) return `a key ${bad}`;
        stack.push([item, depth + 1]);
      }
      continue;
    }
    return 'must be JSON';
  }
  return undefined;
}

/** Compiled schemas by what they depend on: a field's rules seldom change, its checks run on every write. */
const compiled = new Map<string, z.ZodType>();
const COMPILED_MAX = 5_000;

function schemaOf(rule: FieldRule): z.ZodType {
  const signature = JSON.stringify([rule.type, rule.options, rule.validation]);
  let schema = compiled.get(signature);
  if (!schema) {
    if (compiled.size >= COMPILED_MAX) compiled.clear();
    schema = valueSchema(rule);
    compiled.set(signature, schema);
  }
  return schema;
}

const invalid = (message: string) => new ApiError('invalid_request', message);

/** One value checked against its field, as stored; a 400 naming `custom.<key>` otherwise. */
export function checkedValue(rule: FieldRule, value: unknown, path = `custom.${rule.key}`): unknown {
  const parsed = schemaOf(rule).safeParse(value);
  if (parsed.success) return parsed.data;
  throw invalid(describeZodIssues(parsed.error.issues.map((i) => ({ ...i, path: [path, ...i.path] }))));
}

function ruleFor(rules: readonly FieldRule[], object: CustomObject, key: string): FieldRule {
  const rule = rules.find((r) => r.key === key);
  if (!rule) {
    const active = rules.filter((r) => !r.archived).map((r) => r.key);
    const guess = nearest(key, active);
    throw invalid(
      `custom.${key}: unknown field${guess ? `; did you mean "${guess}"?` : ''} (the custom fields of ${object}: ${active.join(', ') || `none yet; POST /custom-fields/${object} defines one`})`,
    );
  }
  if (rule.archived) throw invalid(`custom.${key}: the field is archived and takes no more values`);
  return rule;
}

/**
 * The custom values a write stores: `sent` checked against the organization's fields of `object` and
 * laid over `current` (a created record's: nothing, then the defaults of the fields left out). A key sent
 * as null is cleared. Throws a 400 naming `custom.<key>` for an unknown or archived field, a value of the
 * wrong type or outside its rules, a required field left without a value, or values over the size limit.
 */
export function customValuesOf(
  rules: readonly FieldRule[],
  object: CustomObject,
  sent: Record<string, unknown> | null | undefined,
  current?: Record<string, unknown>,
): Record<string, unknown> {
  const creating = current === undefined;
  if (sent === null) throw invalid('custom: must be an object (send null for a key to clear it)');
  const next: Record<string, unknown> = { ...current };
  for (const [key, value] of Object.entries(sent ?? {})) {
    const rule = ruleFor(rules, object, key);
    if (value === null || value === undefined) {
      if (rule.required) throw invalid(`custom.${key}: the field is required and cannot be cleared`);
      delete next[key];
    } else next[key] = checkedValue(rule, value);
  }
  if (creating) {
    for (const rule of rules) {
      if (rule.archived || Object.hasOwn(next, rule.key)) continue;
      if (rule.default !== null && rule.default !== undefined) next[rule.key] = rule.default;
      else if (rule.required) throw invalid(`custom.${rule.key}: Required (a required custom field)`);
    }
  }
  const bytes = Buffer.byteLength(JSON.stringify(next));
  if (bytes > CUSTOM_LIMITS.valueBytesPerRecord)
    throw invalid(
      `custom: the values take ${bytes} bytes, over the limit of ${CUSTOM_LIMITS.valueBytesPerRecord} bytes per record`,
    );
  return next;
}

/** What a write changed of a record's custom values, as `custom.<key>` entries of its changes. */
export function customChanges(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
): Record<string, { from: unknown; to: unknown }> {
  const changes: Record<string, { from: unknown; to: unknown }> = {};
  for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const from = Object.hasOwn(before, key) ? before[key] : null;
    const to = Object.hasOwn(after, key) ? after[key] : null;
    if (JSON.stringify(from) !== JSON.stringify(to)) changes[`custom.${key}`] = { from, to };
  }
  return changes;
}

const NUMERIC = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$/i;
const TRUE_WORDS = new Set(['true', 'yes', '1']);
const FALSE_WORDS = new Set(['false', 'no', '0']);

/** A value's plain text, as a text field would hold it (a list joined by commas, JSON as its text). */
function textOf(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value.join(', ');
  return typeof value === 'number' || typeof value === 'boolean' ? String(value) : JSON.stringify(value);
}

/** The value a stored `value` becomes under another type, before that type's rules check it. */
function recast(value: unknown, type: FieldType): unknown {
  switch (type) {
    case 'text':
    case 'long_text':
    case 'email':
    case 'url':
    case 'phone':
    case 'select':
      return typeof value === 'string' ? value.trim() : textOf(value);
    case 'number':
    case 'currency':
      return typeof value === 'string' && NUMERIC.test(value.trim()) ? Number(value.trim()) : value;
    case 'boolean': {
      const word =
        typeof value === 'string' || typeof value === 'number' ? String(value).trim().toLowerCase() : '';
      return TRUE_WORDS.has(word) ? true : FALSE_WORDS.has(word) ? false : value;
    }
    case 'date':
      // A date-time's day in UTC.
      return typeof value === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(value)
        ? new Date(value).toISOString().slice(0, 10)
        : value;
    case 'datetime':
      // A day is its midnight, UTC.
      return typeof value === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(value) ? `${value}T00:00:00Z` : value;
    case 'multi_select':
      return typeof value === 'string'
        ? value
            .split(',')
            .map((v) => v.trim())
            .filter(Boolean)
        : value;
    case 'json':
      return value;
  }
}

/**
 * A stored value converted to `rule`'s type (docs/api/custom-fields.md: Converting a field): recast (a
 * numeric text to its number, "yes"/"no" to a boolean, a list to its text joined by commas, …) and then
 * checked by the new type's own rules, so a converted value is one a write could have stored. Or why not.
 */
export function convertedValue(value: unknown, rule: FieldRule): { value: unknown } | { reason: string } {
  try {
    return { value: checkedValue(rule, recast(value, rule.type), 'value') };
  } catch (err) {
    if (err instanceof ApiError) return { reason: err.message.replace(/^value: /, '') };
    throw err;
  }
}
