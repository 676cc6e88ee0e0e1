import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { buildOpenApiDocument } from '../src/openapi.ts';
import { appRouter } from '../src/router.ts';
import type { Meta } from '../src/trpc.ts';

type Json = Record<string, unknown>;
interface MediaType {
  schema?: Json;
  example?: unknown;
  examples?: Record<string, { value?: unknown }>;
}
interface Operation {
  operationId: string;
  summary?: string;
  description?: string;
  tags?: string[];
  requestBody?: { content: Record<string, MediaType> };
}

const doc = buildOpenApiDocument() as unknown as {
  info: Json & { license?: Json; contact?: Json };
  security?: Json[];
  tags?: { name: string; description?: string }[];
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Json>; securitySchemes: Record<string, Json> };
};

const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
  Object.entries(item).map(([method, op]) => ({ method, path, op })),
);

/** The tRPC procedure behind an operation, for its zod input schema. */
function procedureOf(method: string, path: string) {
  const procedures = appRouter._def.procedures as unknown as Record<
    string,
    { _def: { meta?: Meta; inputs: z.ZodType[] } }
  >;
  const found = Object.values(procedures).find(
    (p) => p._def.meta?.openapi?.method.toLowerCase() === method && p._def.meta.openapi.path === path,
  );
  if (!found) throw new Error(`no procedure for ${method} ${path}`);
  return found;
}

/** Every example a reader of the document (or the reference page) is shown for a request body. */
function requestExamples(media: MediaType): unknown[] {
  return [
    ...((media.schema?.examples as unknown[] | undefined) ?? []),
    ...(media.example === undefined ? [] : [media.example]),
    ...Object.values(media.examples ?? {}).map((e) => e.value),
  ];
}

/** A schema's properties, following nested objects, arrays and anyOf branches. */
function* properties(schema: unknown, at: string): Generator<[string, Json]> {
  if (!schema || typeof schema !== 'object') return;
  const s = schema as Json;
  for (const [name, prop] of Object.entries((s.properties as Record<string, Json>) ?? {})) {
    yield [`${at}.${name}`, prop];
    yield* properties(prop, `${at}.${name}`);
  }
  if (s.items) yield* properties(s.items, `${at}[]`);
  for (const branch of (s.anyOf as Json[]) ?? []) yield* properties(branch, at);
}

const formatOf = (prop: Json): unknown =>
  prop.format ?? (prop.anyOf as Json[] | undefined)?.find((b) => b.type === 'string')?.format;

/** A path parameter that is not an id, as a request would give it. */
const SAMPLE_PATH_VALUES: Record<string, string> = { object: 'deals', key: 'arr' };

describe('the OpenAPI document', () => {
  it('asks for the bearer API key on the whole API, so the reference page selects it', () => {
    expect(doc.components.securitySchemes.Authorization).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.security).toEqual([{ Authorization: [] }]);
  });

  it('says who may use it and whom to ask', () => {
    expect(doc.info.license).toMatchObject({ name: expect.any(String) });
    expect(doc.info.contact).toMatchObject({ name: expect.any(String) });
  });

  it('gives every operation a description beside its summary, and describes every tag it uses', () => {
    const described = new Map((doc.tags ?? []).map((t) => [t.name, t.description]));
    for (const { method, path, op } of operations) {
      const where = `${method.toUpperCase()} ${path}`;
      expect(op.description, where).toMatch(/\S.*\./);
      expect(op.description, where).not.toBe(op.summary);
      expect(op.tags?.length, where).toBe(1);
      for (const tag of op.tags ?? []) expect(described.get(tag), `${where}: tag ${tag}`).toMatch(/\S/);
    }
    const used = new Set(operations.flatMap(({ op }) => op.tags ?? []));
    expect([...described.keys()].sort()).toEqual([...used].sort());
  });

  it('shows for each request body an example that its own input schema accepts', () => {
    const bodies = operations.filter(({ op }) => op.requestBody);
    expect(bodies.map(({ method, path }) => `${method.toUpperCase()} ${path}`).sort()).toEqual([
      'PATCH /activities/{id}',
      'PATCH /companies/{id}',
      'PATCH /contacts/{id}',
      'PATCH /custom-fields/{object}/{key}',
      'PATCH /deals/{id}',
      'PATCH /pipelines/{id}',
      'PATCH /pipelines/{id}/stages/{stage_id}',
      'PATCH /views/{id}',
      'PATCH /webhooks/{id}',
      'POST /activities',
      'POST /activities/batch',
      'POST /activities/query',
      'POST /companies',
      'POST /companies/batch',
      'POST /companies/query',
      'POST /contacts',
      'POST /contacts/batch',
      'POST /contacts/query',
      'POST /custom-fields/apply',
      'POST /custom-fields/plan',
      'POST /custom-fields/{object}',
      'POST /custom-fields/{object}/{key}/convert',
      'POST /deals',
      'POST /deals/batch',
      'POST /deals/query',
      'POST /pipelines',
      'POST /pipelines/{id}/stages',
      'POST /views',
      'POST /webhooks',
      'PUT /deals/{id}/stakeholders/{contact_id}',
    ]);
    for (const { method, path, op } of bodies) {
      const where = `${method.toUpperCase()} ${path}`;
      const media = op.requestBody?.content['application/json'];
      expect(media, where).toBeDefined();
      const examples = requestExamples(media as MediaType);
      expect(examples.length, `${where} has an example`).toBeGreaterThan(0);
      const input = procedureOf(method, path)._def.inputs[0] as z.ZodType;
      // The path's parameters are part of the procedure's input, not of the body.
      const pathParams = Object.fromEntries(
        [...path.matchAll(/\{(\w+)\}/g)].map(([, name]) => [
          name,
          SAMPLE_PATH_VALUES[name as string] ?? '019a0000-0000-7000-8000-000000000001',
        ]),
      );
      for (const example of examples) {
        const result = input.safeParse({ ...(example as Json), ...pathParams });
        expect(result.error?.issues ?? [], `${where}: ${JSON.stringify(example)}`).toEqual([]);
      }
    }
  });

  it('marks e-mail and URL outputs with their format', () => {
    const checked: string[] = [];
    for (const [name, schema] of Object.entries(doc.components.schemas)) {
      for (const [at, prop] of properties(schema, name)) {
        const field = at.slice(at.lastIndexOf('.') + 1);
        if (field === 'email' || field.endsWith('_email')) {
          expect(formatOf(prop), at).toBe('email');
          checked.push(at);
        } else if (field === 'url' || field.endsWith('_url')) {
          expect(formatOf(prop), at).toBe('uri');
          checked.push(at);
        }
      }
    }
    expect(checked).toEqual(
      expect.arrayContaining([
        'Contact.email',
        'Contact.linkedin_url',
        'Deal.contact_email',
        'Stakeholder.email',
        'SearchContact.email',
        'Webhook.url',
        'WebhookCreateResponse.data.url',
      ]),
    );
  });

  it('only documents the formats of outputs: stored values are answered as they are', () => {
    // Values stored before the inputs were validated as strictly must not make a read fail.
    const { Contact } = doc.components.schemas;
    expect(Contact).toBeDefined();
    const contactOutput = procedureOf('get', '/contacts/{id}')._def as unknown as {
      output: z.ZodType;
    };
    const legacy = {
      data: {
        id: '019a0000-0000-7000-8000-000000000001',
        name: 'Ada',
        email: 'ada at example',
        title: null,
        phone: null,
        deal_id: '019a0000-0000-7000-8000-000000000002',
        company_id: null,
        role_type: 'unknown',
        department: null,
        influence_level: null,
        engagement_level: null,
        sentiment: null,
        linkedin_url: 'linkedin.com/in/ada',
        notes: null,
        created_at: '2026-01-01T00:00:00.000Z',
        updated_at: null,
        custom: {},
        deal: { title: null, company: null },
      },
    };
    expect(contactOutput.output.safeParse(legacy).error?.issues ?? []).toEqual([]);
  });
});
