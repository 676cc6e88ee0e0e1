import { issueApiKey } from '@crm/api';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVERS, startTestServer, type TestOrg, type TestServer, UUID } from './harness.ts';
import { mcpClient } from './mcp-client.ts';

for (const { driver, label, skip } of DRIVERS) {
  describe.skipIf(skip)(`companies on ${label}`, () => {
    let s: TestServer;
    let org: TestOrg;
    beforeAll(async () => {
      s = await startTestServer(driver, { CRM_WEBHOOKS_ALLOW_PRIVATE: 'true' });
    });
    afterAll(async () => {
      await s?.stop();
    });
    const freshOrg = async () => {
      org = await s.newOrg(`companies ${Math.random()}`);
      return org;
    };
    const api = (path: string, init: Parameters<TestServer['api']>[1] = {}) =>
      s.api(path, { key: org.apiKey, ...init });
    const post = (path: string, json: unknown) => api(path, { method: 'POST', json });
    const patch = (path: string, json: unknown) => api(path, { method: 'PATCH', json });

    it('creates, reads, lists, searches and changes a company; its domain is normalized and unique', async () => {
      await freshOrg();
      const made = await post('/companies', {
        name: 'Acme Corp',
        domain: 'https://www.ACME.com/about',
        industry: 'Manufacturing',
        size: '201-500',
        website: 'https://acme.com',
      });
      expect(made.status, made.text).toBe(201);
      const acme = made.body.data;
      expect(acme).toMatchObject({
        id: expect.stringMatching(UUID),
        name: 'Acme Corp',
        domain: 'acme.com',
        industry: 'Manufacturing',
        size: '201-500',
        website: 'https://acme.com',
        updated_at: null,
        custom: {},
      });
      expect((await post('/companies', { name: 'Globex' })).status).toBe(201);

      // The same domain, spelled another way, is the same domain: a 409 naming the holder, nothing written.
      const twin = await post('/companies', { name: 'Acme again', domain: 'Acme.COM' });
      expect(twin.status).toBe(409);
      expect(twin.body).toMatchObject({ code: 'conflict', conflicting_id: acme.id });
      expect(twin.body.error).toBe(`domain: acme.com is already the domain of company ${acme.id}`);

      const bad = await post('/companies', { name: 'X', domain: 'not a domain', size: 'huge' });
      expect(bad.status).toBe(400);
      expect(bad.body.error).toContain('domain: not a domain name: "not a domain"');
      expect(bad.body.error).toContain('size');

      const listed = await api('/companies');
      expect(listed.body.meta).toMatchObject({ total: 2, limit: 50, offset: 0, next_cursor: null });
      expect(listed.body.data.map((c: { name: string }) => c.name)).toEqual(['Globex', 'Acme Corp']);
      const page1 = await api('/companies?limit=1');
      const page2 = await api(`/companies?limit=1&after=${page1.body.meta.next_cursor}`);
      expect(page2.body.data[0].id).toBe(acme.id);
      expect((await api('/companies?q=acme.c')).body).toMatchObject({
        data: [{ id: acme.id }],
        meta: { total: 1 },
      });

      const searched = await api('/search?q=acme');
      expect(searched.body.data.companies).toEqual([
        { id: acme.id, name: 'Acme Corp', domain: 'acme.com', industry: 'Manufacturing', custom: {} },
      ]);
      expect(searched.body.meta.companies).toEqual({ total: 1, exact: true });

      const changed = await patch(`/companies/${acme.id}`, { industry: null, size: '501-1000' });
      expect(changed.status, changed.text).toBe(200);
      expect(changed.body.data).toMatchObject({
        industry: null,
        size: '501-1000',
        updated_at: expect.any(String),
      });
      const taken = await patch(`/companies/${listed.body.data[0].id}`, { domain: 'www.acme.com' });
      expect(taken.status).toBe(409);
      expect(taken.body.conflicting_id).toBe(acme.id);
      // Its own domain again is no conflict.
      expect((await patch(`/companies/${acme.id}`, { domain: 'acme.com' })).status).toBe(200);

      const events = await api('/events?types=company.created,company.updated');
      expect(events.status, events.text).toBe(200);
      const kinds = events.body.data.map((e: { type: string; data: { id: string } }) => [e.type, e.data.id]);
      expect(kinds).toContainEqual(['company.created', acme.id]);
      const update = events.body.data.find((e: { type: string }) => e.type === 'company.updated');
      expect(update.changes).toEqual({
        industry: { from: 'Manufacturing', to: null },
        size: { from: '201-500', to: '501-1000' },
      });
      // A webhook may subscribe to the new kinds.
      const hook = await post('/webhooks', { url: 'http://127.0.0.1:9/hooks', events: ['company.created'] });
      expect(hook.status, hook.text).toBe(201);
      expect((await api(`/companies/${UUID_NONE}`)).status).toBe(404);
    });

    it('links deals and contacts: the deal shows and follows its company’s name; the detail counts them', async () => {
      await freshOrg();
      const acme = (await post('/companies', { name: 'Acme', domain: 'acme.com' })).body.data;
      const linked = await post('/deals', { title: 'Rollout', company_id: acme.id, value: 1000 });
      expect(linked.status, linked.text).toBe(201);
      expect(linked.body.data).toMatchObject({ company_id: acme.id, company_name: 'Acme' });
      const own = (await post('/deals', { title: 'Renewal', company_id: acme.id, company_name: 'Acme EMEA' }))
        .body.data;
      expect(own).toMatchObject({ company_id: acme.id, company_name: 'Acme EMEA' });
      const unlinked = (await post('/deals', { title: 'Other', company_name: 'Initech' })).body.data;
      expect(unlinked.company_id).toBeNull();
      expect((await post('/deals', { title: 'Ghost', company_id: UUID_NONE })).status).toBe(404);

      // A contact on a linked deal works at its company unless told otherwise.
      const jane = await post('/contacts', {
        name: 'Jane',
        deal_id: linked.body.data.id,
        role_type: 'champion',
      });
      expect(jane.status, jane.text).toBe(201);
      expect(jane.body.data.company_id).toBe(acme.id);
      const bob = (await post('/contacts', { name: 'Bob', deal_id: unlinked.id })).body.data;
      expect(bob.company_id).toBeNull();
      expect((await patch(`/contacts/${bob.id}`, { company_id: acme.id })).body.data.company_id).toBe(
        acme.id,
      );
      expect((await patch(`/contacts/${bob.id}`, { company_id: UUID_NONE })).status).toBe(404);

      // A rename reaches the deal that shows the company's name, not the one with its own.
      await patch(`/companies/${acme.id}`, { name: 'Acme Corporation' });
      expect((await api(`/deals/${linked.body.data.id}`)).body.data.deal.company_name).toBe(
        'Acme Corporation',
      );
      expect((await api(`/deals/${own.id}`)).body.data.deal.company_name).toBe('Acme EMEA');
      // Linking a deal that has no company name gives it the company's; clearing the name gives it back.
      const relinked = await patch(`/deals/${unlinked.id}`, { company_id: acme.id, company_name: null });
      expect(relinked.body.data).toMatchObject({ company_id: acme.id, company_name: 'Acme Corporation' });
      const cleared = await patch(`/deals/${own.id}`, { company_name: null });
      expect(cleared.body.data.company_name).toBe('Acme Corporation');

      const detail = await api(`/companies/${acme.id}`);
      expect(detail.status, detail.text).toBe(200);
      expect(detail.body.data.counts).toEqual({ deals: 3, open_deals: 3, contacts: 2 });
      expect(detail.body.data.deals.map((d: { title: string }) => d.title)).toEqual([
        'Other',
        'Renewal',
        'Rollout',
      ]);
      expect(detail.body.data.contacts.map((c: { name: string }) => c.name)).toEqual(['Bob', 'Jane']);
      expect(detail.body.data.deals[2]).toMatchObject({ value: 1000, currency: 'USD', stage_type: 'open' });

      // Unlinking keeps the name as the deal's own; deleting the company unlinks the rest.
      const off = await patch(`/deals/${linked.body.data.id}`, { company_id: null });
      expect(off.body.data).toMatchObject({ company_id: null, company_name: 'Acme Corporation' });
      expect((await api(`/companies/${acme.id}`, { method: 'DELETE' })).body).toEqual({ success: true });
      expect((await api(`/companies/${acme.id}`)).status).toBe(404);
      expect((await api(`/companies/${acme.id}`, { method: 'DELETE' })).status).toBe(404);
      const after = (await api(`/deals/${own.id}`)).body.data.deal;
      expect(after).toMatchObject({ company_id: null, company_name: 'Acme Corporation' });
      expect((await api(`/contacts/${jane.body.data.id}`)).body.data.company_id).toBeNull();
      expect((await api('/companies')).body.meta.total).toBe(0);
    });

    it('filters and sorts companies with the query language, by GET and by POST /companies/query', async () => {
      await freshOrg();
      expect((await post('/custom-fields/companies', { key: 'tier', type: 'number' })).status).toBe(201);
      for (const [name, size, tier] of [
        ['Alpha', '11-50', 1],
        ['Beta', '201-500', 3],
        ['Gamma', '201-500', 2],
        ['Delta', '10001+', 3],
      ] as const)
        expect((await post('/companies', { name, size, custom: { tier } })).status).toBe(201);
      const filter = {
        and: [
          { field: 'custom.tier', op: 'gte', value: 2 },
          { field: 'size', op: 'neq', value: '10001+' },
        ],
      };
      const viaGet = await api(
        `/companies?filter=${encodeURIComponent(JSON.stringify(filter))}&sort=-custom.tier,name`,
      );
      expect(viaGet.status, viaGet.text).toBe(200);
      expect(viaGet.body.data.map((c: { name: string }) => c.name)).toEqual(['Beta', 'Gamma']);
      expect(viaGet.body.meta.total).toBe(2);
      const viaPost = await post('/companies/query', { filter, sort: '-custom.tier,name' });
      expect(viaPost.status).toBe(200);
      expect(viaPost.body).toEqual(viaGet.body);
      const wrong = await api(
        `/companies?filter=${encodeURIComponent(JSON.stringify({ field: 'sise', op: 'eq', value: 'x' }))}`,
      );
      expect(wrong.status).toBe(400);
      expect(wrong.body.error).toBe('filter/field: unknown field "sise"; did you mean "size"?');
    });

    it('concurrent creates of one domain: one company, the others a 409 naming it', async () => {
      await freshOrg();
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) => post('/companies', { name: `Racer ${i}`, domain: 'race.io' })),
      );
      const statuses = results.map((r) => r.status).sort();
      expect(statuses).toEqual([201, 409, 409, 409, 409, 409]);
      const winner = results.find((r) => r.status === 201)?.body.data.id;
      for (const r of results.filter((x) => x.status === 409)) expect(r.body.conflicting_id).toBe(winner);
      expect((await api('/companies')).body.meta.total).toBe(1);
    });

    it('custom fields on companies; batch; scopes; tRPC and MCP reach the same operations', async () => {
      await freshOrg();
      const field = await post('/custom-fields/companies', { key: 'duns', type: 'text', unique: true });
      expect(field.status, field.text).toBe(201);
      const batch = await post('/companies/batch', {
        items: [
          { name: 'One', custom: { duns: '111' } },
          { name: 'Two', custom: { duns: '111' } },
        ],
      });
      expect(batch.status).toBe(409);
      expect(batch.body.error).toContain('items[1].custom.duns');
      expect((await api('/companies')).body.meta.total).toBe(0);
      const ok = await post('/companies/batch', {
        items: [
          { name: 'One', custom: { duns: '111' } },
          { name: 'Two', custom: { duns: '222' } },
        ],
      });
      expect(ok.status, ok.text).toBe(201);
      expect(ok.body.data.map((c: { custom: unknown }) => c.custom)).toEqual([
        { duns: '111' },
        { duns: '222' },
      ]);
      const unknownKey = await post('/companies', { name: 'Three', custom: { dnus: '3' } });
      expect(unknownKey.status).toBe(400);
      expect(unknownKey.body.error).toContain('custom.dnus');

      const fork = () => s.running.db.orm.em.fork();
      const { api_key: reader } = await issueApiKey(fork(), org.orgId, { scopes: ['companies:read'] });
      expect((await api('/companies', { key: reader })).status).toBe(200);
      const refused = await api('/companies', { key: reader, method: 'POST', json: { name: 'No' } });
      expect(refused.status).toBe(403);
      expect(refused.body.code).toBe('insufficient_scope');
      const { api_key: dealsOnly } = await issueApiKey(fork(), org.orgId, { scopes: ['deals:read'] });
      expect((await api('/companies', { key: dealsOnly })).status).toBe(403);

      const trpc = s.trpc(org);
      const viaTrpc = await trpc.companies.create.mutate({ name: 'Via tRPC', domain: 'HTTPS://Trpc.io' });
      expect(viaTrpc.data.domain).toBe('trpc.io');
      const mcp = await mcpClient(s.url, org.apiKey);
      try {
        const tools = await mcp.listTools();
        const create = tools.tools.find((t) => t.name === 'companies-create');
        expect(create?.inputSchema.properties?.custom).toMatchObject({
          properties: { duns: { type: 'string' } },
        });
        const viaMcp = (await mcp.callTool({
          name: 'companies-create',
          arguments: { name: 'Via MCP', domain: 'mcp.dev' },
        })) as CallToolResult;
        expect(viaMcp.isError, JSON.stringify(viaMcp.content)).toBeFalsy();
        expect(JSON.stringify(viaMcp.structuredContent)).toContain('"domain":"mcp.dev"');
        const dup = (await mcp.callTool({
          name: 'companies-create',
          arguments: { name: 'Again', domain: 'mcp.dev' },
        })) as CallToolResult;
        expect(dup.isError).toBe(true);
        expect(JSON.stringify(dup.content)).toContain('already the domain of company');
      } finally {
        await mcp.close();
      }
      // Another organization sees none of them.
      expect((await s.api('/companies?q=Via')).body.data).toEqual([]);
    });
  });
}

const UUID_NONE = '0195f3a2-7c1e-7b3a-9f10-2d4e6a8c0b12';
