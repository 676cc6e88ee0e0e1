import { allPages, CrmError, responseOf } from '@crm/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVERS, startTestServer, type TestServer, UUID } from './harness.ts';

for (const { driver, label, skip } of DRIVERS) {
  describe.skipIf(skip)(`typed clients on ${label}`, () => {
    let s: TestServer;
    beforeAll(async () => {
      s = await startTestServer(driver);
    });
    afterAll(async () => {
      await s?.stop();
    });

    it('the tRPC client creates, reads, updates and deletes with the same JSON as REST', async () => {
      const client = s.trpc(s.orgA);
      const created = await client.deals.create.mutate({ title: 'Via tRPC', value: 42 });
      expect(created.data).toMatchObject({ title: 'Via tRPC', value: 42, stage_name: 'Lead' });
      const rest = await s.api(`/deals/${created.data.id}`);
      const detail = await client.deals.get.query({ id: created.data.id });
      expect(detail).toEqual(rest.body);
      const updated = await client.deals.update.mutate({ id: created.data.id, notes: 'typed' });
      expect(updated.data.notes).toBe('typed');
      const contact = await client.contacts.create.mutate({ name: 'Typed Tim', deal_id: created.data.id });
      expect(contact.data.role_type).toBe('unknown');
      const list = await client.contacts.list.query({ q: 'typed' });
      expect(list.meta.total).toBe(1);
      const stages = await client.pipeline.stages.query();
      expect(stages.data).toHaveLength(6);
      const found = await client.search.query.query({ q: 'via t' });
      expect(found.data.deals?.[0]?.id).toBe(created.data.id);
      expect(await client.deals.delete.mutate({ id: created.data.id })).toEqual({ success: true });
    });

    it('the tRPC client throws a CrmError with the status, the contract body and the request id', async () => {
      const client = s.trpc(s.orgA);
      const err = await client.deals.create.mutate({ title: '' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CrmError);
      const error = err as CrmError;
      expect(error).toMatchObject({
        status: 400,
        code: 'invalid_request',
        message: expect.stringContaining('title'),
      });
      expect(error.body).toEqual({ error: expect.stringContaining('title'), code: 'invalid_request' });
      expect(error.requestId).toMatch(UUID);
      expect(JSON.stringify(error.body)).not.toMatch(/stack|at .*\.ts/);
      const unauth = await s
        .trpc({ ...s.orgA, apiKey: 'ck_wrongwrongwrongwrongwrongwrongwr' })
        .deals.list.query({})
        .catch((e: unknown) => e);
      expect(unauth).toMatchObject({ status: 401, code: 'invalid_api_key' });
    });

    it('each result tells its rate limit, quota and request id', async () => {
      const client = s.trpc(s.orgA);
      const listed = await client.deals.list.query({ limit: 1 });
      const answer = responseOf(listed);
      expect(answer).toMatchObject({ status: 200, attempts: 1, replayed: false, aiQuota: null });
      expect(answer.requestId).toMatch(UUID);
      expect(answer.rateLimit).toMatchObject({ group: 'crud', limit: 1_000_000, windowSeconds: 60 });
      expect(answer.apiQuota?.used).toBeGreaterThan(0);
      const rest = await s.rest(s.orgA).GET('/pipeline/stages');
      expect(responseOf(rest).rateLimit?.group).toBe('default');
    });

    it('the REST SDK is typed from the OpenAPI document and talks to the documented paths', async () => {
      const client = s.rest(s.orgA);
      const created = await client.POST('/deals', {
        body: { title: 'Via REST SDK', company_name: 'Typed Inc' },
      });
      expect(created.response.status).toBe(201);
      const id = created.data?.data.id as string;
      const got = await client.GET('/deals/{id}', { params: { path: { id } } });
      expect(got.data?.data.deal.company_name).toBe('Typed Inc');
      const listed = await client.GET('/deals', { params: { query: { limit: 1 } } });
      expect(listed.data?.meta).toMatchObject({ limit: 1, offset: 0 });
      const patched = await client.PATCH('/deals/{id}', { params: { path: { id } }, body: { value: 7 } });
      expect(patched.data?.data.value).toBe(7);
      const bad = await client.POST('/contacts', { body: { name: 'x', deal_id: 'nope' } }).catch((e) => e);
      expect(bad).toBeInstanceOf(CrmError);
      expect(bad.body).toEqual({ error: expect.stringContaining('deal_id'), code: 'invalid_request' });
      const deleted = await client.DELETE('/deals/{id}', { params: { path: { id } } });
      expect(deleted.data).toEqual({ success: true });
      await expect(client.GET('/deals/{id}', { params: { path: { id } } })).rejects.toMatchObject({
        status: 404,
        code: 'not_found',
      });
    });

    it('allPages reads every deal by cursor, with either client', async () => {
      const org = await s.newOrg('All pages org');
      for (let i = 0; i < 12; i++) await s.trpc(org).deals.create.mutate({ title: `Paged ${i}` });
      const trpc = s.trpc(org);
      const viaTrpc: string[] = [];
      for await (const deal of allPages((after) => trpc.deals.list.query({ limit: 5, after })))
        viaTrpc.push(deal.title);
      expect(viaTrpc).toEqual(Array.from({ length: 12 }, (_, i) => `Paged ${11 - i}`));
      const rest = s.rest(org);
      const viaRest: string[] = [];
      for await (const deal of allPages(async (after) => {
        const { data } = await rest.GET('/deals', {
          params: { query: { limit: 5, ...(after ? { after } : {}) } },
        });
        if (!data) throw new Error('no page');
        return data;
      }))
        viaRest.push(deal.title);
      expect(viaRest).toEqual(viaTrpc);
      // The event feed's cursor stays set at its end (for polling): allPages stops there all the same.
      const events: string[] = [];
      for await (const event of allPages((after) => trpc.events.list.query({ limit: 5, after })))
        events.push(event.type);
      expect(events).toEqual(Array.from({ length: 12 }, () => 'deal.created'));
    });
  });
}
