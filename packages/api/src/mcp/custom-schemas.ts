import type { EntityManager } from '@crm/db';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { CUSTOM_OBJECTS, type CustomObject } from '../features/custom-fields/custom-field.schemas.ts';
import { fieldRules } from '../features/custom-fields/custom-fields.service.ts';
import type { FieldRule } from '../features/custom-fields/custom-values.ts';

type JsonSchema = { [key: string]: unknown };

/** The object whose custom values a tool's input carries, by the tool's name. */
function objectOf(tool: Tool): CustomObject | undefined {
  const prefix = tool.name.slice(0, tool.name.indexOf('-'));
  return (CUSTOM_OBJECTS as readonly string[]).includes(prefix) ? (prefix as CustomObject) : undefined;
}

function compilesInJavaScript(pattern: string): boolean {
  try {
    new RegExp(pattern, 'u');
    return true;
  } catch {
    return false;
  }
}

/** One field's value as JSON Schema, with what an agent needs to write it (label, rules, options). */
function valueSchema(rule: FieldRule & { label?: string }): JsonSchema {
  const { min, max, max_length: maxLength, pattern } = rule.validation;
  const active = rule.options.filter((o) => !o.archived).map((o) => o.value);
  const text = (extra: JsonSchema = {}) => ({
    type: 'string',
    ...(maxLength !== undefined ? { maxLength } : {}),
    // RE2 syntax the JSON Schema validators of MCP clients may not compile ((?i), \pL): left out then.
    ...(pattern !== undefined && compilesInJavaScript(pattern) ? { pattern } : {}),
    ...extra,
  });
  const number = {
    type: 'number',
    ...(min !== undefined ? { minimum: min } : {}),
    ...(max !== undefined ? { maximum: max } : {}),
  };
  switch (rule.type) {
    case 'text':
    case 'long_text':
    case 'phone':
      return text();
    case 'email':
      return text({ format: 'email' });
    case 'url':
      return text({ format: 'uri' });
    case 'number':
      return number;
    case 'currency':
      return { ...number, description: 'at most 2 decimal places' };
    case 'boolean':
      return { type: 'boolean' };
    case 'date':
      return { type: 'string', format: 'date' };
    case 'datetime':
      return { type: 'string', format: 'date-time' };
    case 'select':
      return { type: 'string', enum: active };
    case 'multi_select':
      return { type: 'array', items: { type: 'string', enum: active }, uniqueItems: true };
    case 'json':
      return {};
  }
}

/** The `custom` argument of a tool, listing the organization's fields of `object` (archived ones left out). */
function customSchema(rules: readonly FieldRule[], object: CustomObject, clearable: boolean): JsonSchema {
  const active = rules.filter((r) => !r.archived);
  const properties = Object.fromEntries(
    active.map((rule) => {
      const schema = valueSchema(rule);
      const notes = [
        rule.required ? 'required' : undefined,
        rule.unique ? `unique among ${object}` : undefined,
        rule.default !== null ? `default ${JSON.stringify(rule.default)}` : undefined,
      ].filter(Boolean);
      const described = { ...schema, description: [`${rule.key} (${rule.type})`, ...notes].join('; ') };
      return [rule.key, clearable ? { anyOf: [described, { type: 'null' }] } : described];
    }),
  );
  const required = clearable ? [] : active.filter((r) => r.required && r.default === null).map((r) => r.key);
  return {
    type: 'object',
    description: `Values of the organization’s custom fields of ${object}, by key${clearable ? '; only the keys sent change, null clears one' : ''}`,
    properties,
    ...(required.length > 0 ? { required } : {}),
    additionalProperties: false,
  };
}

/** `schema` with each property named `custom` (at any depth: a batch's items, its `$defs`) replaced by `custom`. */
function replaceCustom(schema: JsonSchema, custom: JsonSchema): JsonSchema {
  const out: JsonSchema = { ...schema };
  const properties = schema.properties as Record<string, JsonSchema> | undefined;
  if (properties)
    out.properties = Object.fromEntries(
      Object.entries(properties).map(([name, prop]) => [
        name,
        name === 'custom' ? custom : replaceCustom(prop, custom),
      ]),
    );
  const defs = schema.$defs as Record<string, JsonSchema> | undefined;
  if (defs)
    out.$defs = Object.fromEntries(
      Object.entries(defs).map(([name, def]) => [name, replaceCustom(def, custom)]),
    );
  if (schema.items && typeof schema.items === 'object')
    out.items = replaceCustom(schema.items as JsonSchema, custom);
  return out;
}

/**
 * The tools as one organization sees them: where a tool takes `custom` values, the schema lists that
 * organization's own fields (types, options, rules), so an agent writes `custom.arr` as a number without
 * being told. One read of the field definitions per object, only when a listed tool takes them.
 */
export async function withOrganizationFields(em: EntityManager, tools: Tool[]): Promise<Tool[]> {
  const objects = new Set(
    tools
      .filter((t) => objectOf(t) && JSON.stringify(t.inputSchema).includes('"custom"'))
      .map((t) => objectOf(t) as CustomObject),
  );
  if (objects.size === 0) return tools;
  const rules = new Map(
    await Promise.all([...objects].map(async (o) => [o, await fieldRules(em, o)] as const)),
  );
  return tools.map((tool) => {
    const object = objectOf(tool);
    const objectRules = object && rules.get(object);
    if (!object || !objectRules) return tool;
    const custom = customSchema(objectRules, object, tool.name.endsWith('-update'));
    return { ...tool, inputSchema: replaceCustom(tool.inputSchema, custom) as Tool['inputSchema'] };
  });
}
