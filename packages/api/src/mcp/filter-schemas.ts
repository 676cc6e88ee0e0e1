import type { EntityManager } from '@crm/db';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { type Catalogue, catalogueOf, type ValueType } from '../query/fields.ts';
import { FILTER_LIMITS, OPERATORS_BY_TYPE } from '../query/filter.ts';
import type { ListedObject } from '../query/list.ts';
import { ACTIVITIES, COMPANIES, CONTACTS, DEALS } from '../query/objects.ts';
import { allows } from '../scopes.ts';

type JsonSchema = { [key: string]: unknown };

/** The tools whose `filter` argument is the tree as an object, by the object they list. */
const QUERY_TOOLS: Record<string, ListedObject> = {
  'deals-query': DEALS,
  'contacts-query': CONTACTS,
  'companies-query': COMPANIES,
  'activities-query': ACTIVITIES,
};

/** What a condition's value is, by the field's type (docs/api/query.md, Field types). */
const VALUES: Record<ValueType, string> = {
  string: 'text (≤ 1,000 characters)',
  number: 'a JSON number',
  'date-time': 'an ISO 8601 date-time with a time zone',
  date: 'a date, YYYY-MM-DD',
  enum: 'one of the field’s values',
  uuid: 'a uuid',
  boolean: 'true or false',
  array: 'options of the multi-select',
  json: 'true or false (is_null only)',
};

/**
 * The filter tree as JSON Schema over one organization's catalogue: a condition per type of field, its
 * `field` one of the fields of that type (custom ones and related records' the key may read included) and
 * its `op` one of the operators that type takes; groups and/or/not around them, recursively.
 */
function treeSchema(catalogue: Catalogue, scopes: readonly string[]): { node: JsonSchema; defs: JsonSchema } {
  const byType = new Map<ValueType, string[]>();
  for (const field of catalogue.values())
    if (!field.related || allows(scopes, field.related.scope))
      byType.set(field.type, [...(byType.get(field.type) ?? []), field.name]);
  const conditions = [...byType].map(([type, names]) => ({
    type: 'object',
    description: `A condition on a ${type} field; value: ${VALUES[type]} (between: [low, high]; in, nin, has_any, has_all: an array; is_null: true or false)`,
    properties: {
      field: { type: 'string', enum: names },
      op: { type: 'string', enum: [...OPERATORS_BY_TYPE[type]] },
      value: {},
    },
    required: ['field', 'op', 'value'],
    additionalProperties: false,
  }));
  const ref = { $ref: '#/$defs/filter_node' };
  const group = (key: string, schema: JsonSchema) => ({
    type: 'object',
    properties: { [key]: schema },
    required: [key],
    additionalProperties: false,
  });
  const list = { type: 'array', items: ref, minItems: 1 };
  return {
    node: ref,
    defs: {
      filter_node: {
        anyOf: [...conditions, group('and', list), group('or', list), group('not', ref)],
      },
    },
  };
}

/**
 * The query tools as one organization and key see them: `filter` described as the tree, each condition's
 * field one of the organization's fields (its custom fields included) of a type and its operator one that
 * type takes, so an agent writes `custom.region` with `in`, not `contains`. The server checks the tree
 * again whatever the schema says (a field defined since the list was read is accepted).
 */
export async function withFilterFields(
  em: EntityManager,
  tools: Tool[],
  scopes: readonly string[],
): Promise<Tool[]> {
  return Promise.all(
    tools.map(async (tool) => {
      const object = QUERY_TOOLS[tool.name];
      const properties = tool.inputSchema.properties as Record<string, JsonSchema> | undefined;
      if (!object || !properties?.filter) return tool;
      const { node, defs } = treeSchema(await catalogueOf(em, object), scopes);
      return {
        ...tool,
        inputSchema: {
          ...tool.inputSchema,
          properties: {
            ...properties,
            filter: {
              ...node,
              description:
                `${properties.filter.description ?? ''} At most ${FILTER_LIMITS.conditions} conditions and ${FILTER_LIMITS.depth} levels of and/or/not.`.trim(),
            },
          },
          $defs: { ...((tool.inputSchema as JsonSchema).$defs as JsonSchema | undefined), ...defs },
        },
      };
    }),
  );
}
