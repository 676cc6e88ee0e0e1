import { generateOpenApiDocument, type OpenAPIObject } from 'trpc-to-openapi';
import { z } from 'zod';
import { ERRORS, ErrorBodySchema } from './errors.ts';
import { IdempotencyKey } from './idempotency.ts';
import { appRouter } from './router.ts';
import { API_BASE_PATH, OPERATIONS, type Operation } from './routes.ts';

/** An operation's error statuses, in order, each with what its codes mean (those the operation can answer). */
function errorResponses(op: Operation): Array<[number, string]> {
  const byStatus = new Map<number, string[]>();
  for (const code of op.errors) {
    const { status, when } = ERRORS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), `\`${code}\`: ${when}`]);
  }
  return [...byStatus].sort(([a], [b]) => a - b).map(([status, lines]) => [status, lines.join('. ')]);
}

/** The document's tags, in the reference page's order, each with what its operations are about. */
const TAGS = [
  {
    name: 'Deals',
    description:
      'Sales opportunities: create, list, read with their stakeholders and recent activities, change and delete. Creates and changes are recorded as activities and emitted as webhook events.',
  },
  {
    name: 'Contacts',
    description:
      'The stakeholders of a deal: their role in the decision, influence, engagement and sentiment, which the AI insights read.',
  },
  {
    name: 'Companies',
    description:
      'The companies deals and contacts are linked to (`company_id`): one per domain, with counts and the newest deals and people of each.',
  },
  {
    name: 'Activities',
    description:
      'Notes, tasks, calls, meetings and e-mails people log on deals, contacts and companies, and a deal’s timeline.',
  },
  {
    name: 'Pipeline',
    description: 'The stages of the default pipeline, and the health of the open deals in it.',
  },
  { name: 'Search', description: 'Deals, contacts and companies found by a piece of text, in one call.' },
  {
    name: 'Usage',
    description: 'This month’s API and AI calls against the organization’s quotas, and the rate limits.',
  },
  {
    name: 'Webhooks',
    description:
      'Endpoints that receive signed events (Standard Webhooks) when deals, contacts or analyses change, with the history of every delivery.',
  },
  {
    name: 'Events',
    description:
      'The organization’s change feed: every event its webhooks receive, in commit order, with who made the change, kept for `CRM_EVENTS_RETENTION_DAYS` days.',
  },
  {
    name: 'AI insights',
    description:
      'MEDDPICC analysis, win prediction, the daily briefing and coaching, computed from the organization’s own data; they count against the AI quota.',
  },
  {
    name: 'Custom fields',
    description:
      'The organization’s own fields on deals and contacts: typed, checked on every write, their values under `custom` on every record.',
  },
  {
    name: 'Views',
    description:
      'Saved views: a named filter and sort of one list (deals, contacts, companies, activities), applied with `?view=<id>`.',
  },
];

type MediaType = { schema?: { examples?: unknown[] }; example?: unknown; examples?: Record<string, unknown> };
type RequestBody = { content: Record<string, MediaType> };
type DocumentOperation = {
  responses: Record<string, unknown>;
  parameters?: unknown[];
  requestBody?: unknown;
};

/**
 * A request body's example, from its input schema's zod `examples`, on the media type: zod takes a schema's
 * examples for output values and leaves them out of a body whose fields transform (currency is upper-cased,
 * events deduplicated), and on the media type both linters check the example against the schema.
 */
function setRequestExample(media: MediaType, examples: unknown[] | undefined) {
  const all = media.schema?.examples ?? examples ?? [];
  delete media.schema?.examples;
  if (all.length === 1) media.example = all[0];
  else if (all.length > 1)
    media.examples = Object.fromEntries(all.map((value, i) => [`example${i + 1}`, { value }]));
}

type ObjectSchema = { properties?: Record<string, { description?: string }>; required?: string[] };

/**
 * The query parameters of a create (`?upsert_on=`), which trpc-to-openapi puts in its body with the rest
 * of the input: taken out of the body's schema and its example, and described as parameters.
 */
function moveToQuery(media: MediaType, names: ReadonlySet<string>) {
  const schema = media.schema as ObjectSchema | undefined;
  return [...names].flatMap((name) => {
    const property = schema?.properties?.[name];
    if (!schema?.properties || !property) return [];
    delete schema.properties[name];
    if (schema.required) schema.required = schema.required.filter((r) => r !== name);
    const { description, ...rest } = property;
    return [{ in: 'query', name, required: false, description, schema: rest }];
  });
}

/**
 * The OpenAPI 3.1 document generated from the routers, with what trpc-to-openapi cannot express
 * fixed up: 201 on creates, the contract's error bodies instead of tRPC's, the Idempotency-Key header.
 */
export function buildOpenApiDocument(baseUrl = API_BASE_PATH): OpenAPIObject {
  const doc = generateOpenApiDocument(appRouter, {
    title: 'Headless CRM API',
    description:
      'Deals, contacts, pipeline and search for a sales team’s own apps. Every call needs `Authorization: Bearer <API_KEY>`.',
    version: '1.0.0',
    // No LICENSE file and no `license` in package.json: the service is not published under an open
    // licence. OpenAPI 3.1 wants a URL or an SPDX expression beside the name; `LicenseRef-` is SPDX's
    // form for a licence of one's own.
    license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    contact: { name: 'Headless CRM API maintainers' },
    baseUrl,
    securitySchemes: {
      Authorization: {
        type: 'http',
        scheme: 'bearer',
        description: 'An API key of the organization, `ck_…`, as `Authorization: Bearer ck_…`.',
      },
    },
  });
  // Every operation needs the key: said once for the whole API too, so that the reference page selects
  // the scheme for its requests (operations also say it on their own).
  doc.security = [{ Authorization: [] }];
  doc.tags = TAGS;

  const operations = new Map(OPERATIONS.map((op) => [`${op.method.toLowerCase()} ${op.path}`, op]));

  const schemas = (doc.components?.schemas ?? {}) as Record<string, unknown>;
  for (const name of Object.keys(schemas)) if (name.startsWith('error.')) delete schemas[name];
  const { $schema: _dialect, ...errorSchema } = z.toJSONSchema(ErrorBodySchema, { io: 'output' });
  schemas.Error = errorSchema;
  const errorRef = { $ref: '#/components/schemas/Error' };

  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const [method, value] of Object.entries(item as Record<string, DocumentOperation>)) {
      const op = value;
      const operation = operations.get(`${method} ${path}`);
      if (!operation) throw new Error(`${method} ${path} is in the document but not in the route table`);
      const media = (op.requestBody as RequestBody | undefined)?.content['application/json'];
      if (media) setRequestExample(media, operation.input?.meta()?.examples);
      if (media && operation.takesBody && operation.queryParams.size > 0)
        op.parameters = [...(op.parameters ?? []), ...moveToQuery(media, operation.queryParams)];
      const responses: Record<string, unknown> = { [operation.successStatus]: op.responses['200'] };
      for (const [status, description] of errorResponses(operation))
        responses[status] = {
          description,
          content: { 'application/json': { schema: errorRef } },
        };
      op.responses = responses;
      // OpenAPI lists scopes only for OAuth flows (linters refuse them on a bearer scheme): an extension,
      // and a sentence in the description for people.
      Object.assign(op, {
        'x-required-scope': operation.scope,
        description:
          `${(op as { description?: string }).description ?? ''}\n\nNeeds an API key with the scope \`${operation.scope}\` (or \`*\`).`.trim(),
      });
      if (operation.idempotencyKey) {
        op.parameters = [
          ...(op.parameters ?? []),
          {
            in: 'header',
            name: 'Idempotency-Key',
            required: false,
            description: IdempotencyKey.description,
            schema: { ...z.toJSONSchema(IdempotencyKey), $schema: undefined, description: undefined },
          },
        ];
      }
    }
  }
  return doc;
}
