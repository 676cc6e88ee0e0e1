import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVERS, MISSING_ID, startTestServer, type TestOrg, type TestServer } from './harness.ts';
import { mcpClient } from './mcp-client.ts';

const call = (client: Client, name: string, args: Record<string, unknown> = {}) =>
  client.callTool({ name, arguments: args }) as Promise<CallToolResult>;

type Meta = {
  error?: { code: string; retry_after_seconds?: number };
  quotas?: Record<string, { used: number }>;
};
const metaOf = (result: CallToolResult) => result._meta as Meta;

for (const { driver, label, skip } of DRIVERS) {
  describe.skipIf(skip)(`MCP over Streamable HTTP on ${label}`, () => {
    let s: TestServer;
    let a: Client;
    let b: Client;
    beforeAll(async () => {
      s = await startTestServer(driver);
      a = await mcpClient(s.url, s.orgA.apiKey);
      b = await mcpClient(s.url, s.orgB.apiKey);
    });
    afterAll(async () => {
      await a?.close();
      await b?.close();
      await s?.stop();
    });

    it('lists one tool per OpenAPI operation: same names, required inputs and output schemas', async () => {
      const { tools } = await a.listTools();
      const doc = (await fetch(`${s.base}/openapi.json`).then((r) => r.json())) as {
        paths: Record<
          string,
          Record<
            string,
            {
              operationId: string;
              parameters?: Array<{ name: string; in: string; required?: boolean }>;
              requestBody?: {
                content: { 'application/json': { schema: { required?: string[]; $ref?: string } } };
              };
            }
          >
        >;
        components: { schemas: Record<string, { required?: string[] }> };
      };
      const operations = Object.values(doc.paths).flatMap((item) =>
        Object.entries(item).map(([method, op]) => ({ method, ...op })),
      );
      expect(tools.map((t) => t.name).sort()).toEqual(operations.map((o) => o.operationId).sort());
      for (const op of operations) {
        const tool = tools.find((t) => t.name === op.operationId);
        const required = new Set(
          op.parameters?.filter((p) => p.required && p.in !== 'header').map((p) => p.name),
        );
        const body = op.requestBody?.content['application/json'].schema;
        const bodySchema = body?.$ref ? doc.components.schemas[body.$ref.split('/').pop() as string] : body;
        for (const name of bodySchema?.required ?? []) required.add(name);
        expect(new Set(tool?.inputSchema.required ?? []), op.operationId).toEqual(required);
        expect(tool?.outputSchema?.type, op.operationId).toBe('object');
        // A list by a filter in the body is a POST that only reads (its meta says so).
        const readOnly =
          op.method === 'get' ||
          ['deals-query', 'contacts-query', 'companies-query', 'activities-query'].includes(op.operationId);
        expect(tool?.annotations, op.operationId).toMatchObject({
          readOnlyHint: readOnly,
          idempotentHint: op.method !== 'post' || readOnly,
          destructiveHint: op.method === 'delete',
          openWorldHint: false,
        });
        expect(tool?.description?.length, op.operationId).toBeGreaterThan(40);
      }
      expect(tools.find((t) => t.name === 'deals-create')?.inputSchema.properties).toHaveProperty(
        'idempotency_key',
      );
    });

    it('each tool returns the same data as its REST call, with the quota state in _meta', async () => {
      const created = await call(a, 'deals-create', {
        title: 'Via MCP',
        value: 1200,
        company_name: 'Agents Inc',
      });
      expect(created.isError).toBeFalsy();
      const deal = (created.structuredContent as { data: { id: string } }).data;
      expect(JSON.parse((created.content[0] as { text: string }).text)).toEqual(created.structuredContent);
      const got = await call(a, 'deals-get', { id: deal.id });
      expect(got.structuredContent).toEqual((await s.api(`/deals/${deal.id}`)).body);
      const listed = await call(a, 'deals-list', { limit: 5 });
      const rest = await s.api('/deals?limit=5');
      expect(listed.structuredContent).toEqual(rest.body);
      expect(metaOf(listed).quotas?.api_calls?.used).toBeGreaterThan(0);
      const stages = await call(a, 'pipeline-stages');
      expect(stages.structuredContent).toEqual((await s.api('/pipeline/stages')).body);
      const found = await call(a, 'search-query', { q: 'Agents' });
      expect(found.structuredContent).toEqual((await s.api('/search?q=Agents')).body);
    });

    it('a create through MCP records the same activity and emits deal.created', async () => {
      const created = await call(a, 'deals-create', { title: 'Evented via MCP' });
      const id = (created.structuredContent as { data: { id: string } }).data.id;
      const detail = (await s.api(`/deals/${id}`)).body;
      expect(detail.data.recent_activities).toEqual([
        expect.objectContaining({
          type: 'deal_created',
          description: 'Deal "Evented via MCP" created in stage Lead',
        }),
      ]);
      const events = await s.sql<{ type: string; payload: unknown }>(
        "select type, payload from outbox_events where type = 'deal.created' and payload::text like ?",
        [`%${id}%`],
      );
      expect(events).toHaveLength(1);
    });

    it('an idempotency_key makes a retried create answer the first result', async () => {
      const args = { title: 'Retried via MCP', idempotency_key: `mcp-${Date.now()}` };
      const first = await call(a, 'deals-create', args);
      const second = await call(a, 'deals-create', args);
      expect(second.structuredContent).toEqual(first.structuredContent);
      const other = await call(a, 'deals-create', { ...args, title: 'Another body' });
      expect(other.isError).toBe(true);
      expect(metaOf(other).error?.code).toBe('idempotency_key_reused');
    });

    it('another organization’s id is a not-found error, as a missing one', async () => {
      const created = await call(a, 'deals-create', { title: 'Org A only' });
      const id = (created.structuredContent as { data: { id: string } }).data.id;
      for (const target of [id, MISSING_ID]) {
        const result = await call(b, 'deals-get', { id: target });
        expect(result.isError).toBe(true);
        expect(metaOf(result).error?.code).toBe('not_found');
        expect((result.content[0] as { text: string }).text).toMatch(/Deal not found/);
      }
      const resource = await b.readResource({ uri: `crm://deals/${id}` }).catch((e: Error) => e);
      expect(resource).toBeInstanceOf(Error);
      expect((resource as { code?: number }).code).toBe(-32002);
    });

    it('bad input is a tool error naming the field, never a stack', async () => {
      const result = await call(a, 'deals-create', { title: '', contact_email: 'not-an-email' });
      expect(result.isError).toBe(true);
      const text = (result.content[0] as { text: string }).text;
      expect(text).toMatch(/title/);
      expect(text).toMatch(/contact_email/);
      expect(JSON.stringify(result)).not.toMatch(/at .*\.ts|stack/);
      const unknown = await call(a, 'deals-list', { limt: 5 });
      expect(unknown.isError).toBe(true);
      expect((unknown.content[0] as { text: string }).text).toMatch(/Unknown argument: limt/);
    });

    it('a key past its AI limit gets a limited error that says when to retry', async () => {
      const org: TestOrg = await s.newOrg('MCP AI limits', { ai_calls: 1 });
      const client = await mcpClient(s.url, org.apiKey);
      try {
        const created = await call(client, 'deals-create', { title: 'AI-limited' });
        const id = (created.structuredContent as { data: { id: string } }).data.id;
        const first = await call(client, 'ai-predict', { id });
        expect(first.isError).toBeFalsy();
        expect(metaOf(first).quotas?.ai_calls?.used).toBe(1);
        const second = await call(client, 'ai-predict', { id });
        expect(second.isError).toBe(true);
        expect(metaOf(second).error).toMatchObject({
          code: 'ai_quota_exceeded',
          retry_after_seconds: expect.any(Number),
        });
        expect((second.content[0] as { text: string }).text).toMatch(/Retry after \d+ s/);
      } finally {
        await client.close();
      }
    });

    it('prompts and resources list and read', async () => {
      const { prompts } = await a.listPrompts();
      expect(prompts.map((p) => p.name).sort()).toEqual([
        'coaching-review',
        'meeting-prep',
        'pipeline-review',
      ]);
      const prep = await a.getPrompt({ name: 'meeting-prep', arguments: { deal_id: MISSING_ID } });
      expect(JSON.stringify(prep.messages[0]?.content)).toMatch(/deals-get.*ai-analyze.*ai-predict/s);
      const { resources } = await a.listResources();
      expect(resources.map((r) => r.uri).sort()).toEqual(['crm://openapi.json', 'crm://pipeline/stages']);
      const { resourceTemplates } = await a.listResourceTemplates();
      expect(resourceTemplates.map((t) => t.uriTemplate)).toEqual(['crm://deals/{id}']);
      const stages = await a.readResource({ uri: 'crm://pipeline/stages' });
      expect(JSON.parse((stages.contents[0] as { text: string }).text)).toEqual(
        (await s.api('/pipeline/stages')).body,
      );
      const doc = await a.readResource({ uri: 'crm://openapi.json' });
      expect(JSON.parse((doc.contents[0] as { text: string }).text).openapi).toBe('3.1.0');
      const created = await call(a, 'deals-create', { title: 'As a resource' });
      const id = (created.structuredContent as { data: { id: string } }).data.id;
      const deal = await a.readResource({ uri: `crm://deals/${id}` });
      expect(JSON.parse((deal.contents[0] as { text: string }).text).data.deal.title).toBe('As a resource');
    });

    /** One raw POST to /mcp (no SDK client), with `key` unless it is null. */
    const postMcp = (message: unknown, key: string | null = s.orgA.apiKey) =>
      fetch(`${s.url}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(key ? { authorization: `Bearer ${key}` } : {}),
        },
        body: JSON.stringify(message),
      });

    it('a missing or bad key is a 401 with WWW-Authenticate, before any MCP message is read', async () => {
      const init = {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      };
      for (const key of [null, 'ck_wrongwrongwrongwrongwrongwrongwr']) {
        const res = await postMcp(init, key);
        expect(res.status).toBe(401);
        expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm="crm"/);
        expect(((await res.json()) as { code: string }).code).toBe(
          key ? 'invalid_api_key' : 'missing_api_key',
        );
      }
      // A POST of notifications only is accepted with 202 and no body, as the transport requires.
      const notified = await postMcp({ jsonrpc: '2.0', method: 'notifications/initialized' });
      expect(notified.status).toBe(202);
      const get = await fetch(`${s.url}/mcp`, { headers: { authorization: `Bearer ${s.orgA.apiKey}` } });
      expect(get.status).toBe(405);
      expect(get.headers.get('allow')).toBe('POST');
    });

    it('an empty batch ([]) is a 400 with JSON-RPC Invalid Request (-32600), as JSON-RPC 2.0 says', async () => {
      const res = await postMcp([]);
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await res.json()).toEqual({
        jsonrpc: '2.0',
        error: { code: -32600, message: 'Invalid Request: Batch must not be empty' },
        id: null,
      });
      // A batch with a request in it is answered as before (the SDK answers a batch of one unwrapped).
      const listed = await postMcp([{ jsonrpc: '2.0', id: 1, method: 'tools/list' }]);
      expect(listed.status).toBe(200);
      expect(await listed.json()).toMatchObject({ id: 1, result: { tools: expect.any(Array) } });
    });

    it('malformed params answer -32602 Invalid params naming the field, as an agent can correct', async () => {
      const cases: Array<[string, unknown, RegExp]> = [
        [
          'tools/call',
          { name: 'deals-get', arguments: null },
          / params\.arguments: expected record, got null$/,
        ],
        ['tools/call', { name: 5 }, / params\.name: expected string, got number$/],
        ['tools/call', undefined, / params: Required$/],
        ['resources/read', { uri: 7 }, / params\.uri: expected string, got number$/],
        ['prompts/get', {}, / params\.name: Required$/],
      ];
      for (const [method, params, message] of cases) {
        const res = await postMcp({
          jsonrpc: '2.0',
          id: 9,
          method,
          ...(params === undefined ? {} : { params }),
        });
        const body = (await res.json()) as { error?: { code: number; message: string } };
        expect(body.error?.code, `${method} ${JSON.stringify(params)}`).toBe(-32602);
        expect(body.error?.message).toMatch(message);
      }
    });
  });
}
