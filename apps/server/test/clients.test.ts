import type { AppRouter } from '@crm/api';
import { allPages } from '@crm/client';
import { TRPCClientError } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVERS, startTestServer, type TestServer } from './harness.ts';

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

    it('the tRPC client sees the contract error in error.data, with the HTTP status', async () => {
      const client = s.trpc(s.orgA);
      const err = await client.deals.create.mutate({ title: '' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TRPCClientError);
      const data = (err as TRPCClientError<AppRouter>).data;
      expect(data?.httpStatus).toBe(400);
      expect(data?.body).toEqual({ error: expect.stringContaining('title'), code: 'invalid_request' });
      expect(JSON.stringify(data)).not.toMatch(/stack|at .*\.ts/);
      const unauth = await s
        .trpc({ ...s.orgA, apiKey: 'ck_wrongwrongwrongwrongwrongwrongwr' })
        .deals.list.query({})
        .catch((e: unknown) => e as TRPCClientError<AppRouter>);
      expect((unauth as TRPCClientError<AppRouter>).data).toMatchObject({ httpStatus: 401 });
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
      const bad = await client.POST('/contacts', { body: { name: 'x', deal_id: 'nope' } });
      expect(bad.response.status).toBe(400);
      expect(bad.error).toEqual({ error: expect.stringContaining('deal_id'), code: 'invalid_request' });
      const deleted = await client.DELETE('/deals/{id}', { params: { path: { id } } });
      expect(deleted.data).toEqual({ success: true });
      const gone = await client.GET('/deals/{id}', { params: { path: { id } } });
      expect(gone.response.status).toBe(404);
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
    });
  });
}
