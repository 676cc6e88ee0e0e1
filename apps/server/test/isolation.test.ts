import { CrmError } from '@crm/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiResponse, DRIVERS, MISSING_ID, startTestServer, type TestServer } from './harness.ts';

type Init = Parameters<TestServer['api']>[1];

for (const { driver, label, skip } of DRIVERS) {
  describe.skipIf(skip)(`organization isolation on ${label}`, () => {
    let s: TestServer;
    let keyA: string;
    let keyB: string;
    /** Org A's data, which org B must never see or touch. */
    const a = { dealId: '', contactId: '', pipelineId: '', stageIds: [] as string[] };
    /** Org B's own deal and contact, named like A's so that searches and filters would find both. */
    const b = { dealId: '', contactId: '', stageIds: [] as string[] };
    const SHARED_TITLE = 'Isolation Zephyr rollout';
    const SHARED_NAME = 'Quentin Isolato';

    async function post(path: string, key: string, json: unknown) {
      const res = await s.api(path, { method: 'POST', key, json });
      expect(res.status, res.text).toBe(201);
      return res.body.data as { id: string };
    }

    beforeAll(async () => {
      // Webhook endpoints below point at a closed local port.
      s = await startTestServer(driver, { CRM_WEBHOOKS_ALLOW_PRIVATE: 'true' });
      keyA = s.orgA.apiKey;
      keyB = s.orgB.apiKey;

      const deal = await post('/deals', keyA, { title: SHARED_TITLE, company_name: 'Zephyr A', value: 1000 });
      a.dealId = deal.id;
      a.contactId = (
        await post('/contacts', keyA, { name: SHARED_NAME, deal_id: a.dealId, email: 'q@a.example' })
      ).id;
      // More deals in A than in B, so counts that leak across would show.
      await post('/deals', keyA, { title: 'A second' });
      await post('/deals', keyA, { title: 'A third' });
      const stagesA = await s.api('/pipeline/stages', { key: keyA });
      a.stageIds = stagesA.body.data.map((x: { id: string }) => x.id);
      a.pipelineId = (await s.api(`/deals/${a.dealId}`, { key: keyA })).body.data.deal.pipeline_id;

      b.dealId = (await post('/deals', keyB, { title: SHARED_TITLE, company_name: 'Zephyr B' })).id;
      b.contactId = (await post('/contacts', keyB, { name: SHARED_NAME, deal_id: b.dealId })).id;
      const stagesB = await s.api('/pipeline/stages', { key: keyB });
      b.stageIds = stagesB.body.data.map((x: { id: string }) => x.id);
    });
    afterAll(async () => {
      await s?.stop();
    });

    /** Everything stored about A's deal: its row, its contact's row, and its activities. */
    async function aState() {
      return {
        deal: await s.sql('select * from deals where id = ?', [a.dealId]),
        contacts: await s.sql('select * from contacts where deal_id = ? order by id', [a.dealId]),
        activities: await s.sql('select id, type from activities where deal_id = ? order by id', [a.dealId]),
      };
    }

    async function expectAUnchanged(before: Awaited<ReturnType<typeof aState>>) {
      expect(await aState()).toEqual(before);
      const seen = await s.api(`/deals/${a.dealId}`, { key: keyA });
      expect(seen.status).toBe(200);
      expect(seen.body.data.deal).toMatchObject({
        title: SHARED_TITLE,
        company_name: 'Zephyr A',
        value: 1000,
      });
      expect(seen.body.data.stakeholders.map((x: { id: string }) => x.id)).toEqual([a.contactId]);
      const contact = await s.api(`/contacts/${a.contactId}`, { key: keyA });
      expect(contact.status).toBe(200);
      expect(contact.body.data).toMatchObject({ name: SHARED_NAME, email: 'q@a.example', deal_id: a.dealId });
    }

    /** B's request on A's resource, and the same request on a random missing id: same status, same body. */
    async function expectSameAsMissing(path: (id: string) => string, realId: string, init: Init = {}) {
      const foreign = await s.api(path(realId), { ...init, key: keyB });
      const missing = await s.api(path(MISSING_ID), { ...init, key: keyB });
      expect(missing.status).toBe(404);
      expect(foreign.status, foreign.text).toBe(404);
      expect(foreign.body).toEqual(missing.body);
      expect(Object.keys(foreign.body).sort()).toEqual(['code', 'error']);
      expect(foreign.body.code).toBe('not_found');
      return foreign;
    }

    const ids = (res: ApiResponse) => (res.body.data as Array<{ id: string }>).map((x) => x.id);

    async function countOf(table: 'deals' | 'contacts', orgId: string): Promise<number> {
      const [row] = await s.sql<{ n: unknown }>(`select count(*) as n from ${table} where org_id = ?`, [
        orgId,
      ]);
      return Number(row?.n);
    }

    describe("another organization's deal answers 404 exactly like a missing one", () => {
      it('GET /deals/{id} of A with B’s key answers the missing-deal 404', async () => {
        const before = await aState();
        await expectSameAsMissing((id) => `/deals/${id}`, a.dealId);
        await expectAUnchanged(before);
      });

      it('PATCH /deals/{id} of A with B’s key answers the missing-deal 404 and changes nothing', async () => {
        const before = await aState();
        await expectSameAsMissing((id) => `/deals/${id}`, a.dealId, {
          method: 'PATCH',
          json: { title: 'Hijacked', value: 1, notes: 'from B' },
        });
        await expectAUnchanged(before);
      });

      it('DELETE /deals/{id} of A with B’s key answers the missing-deal 404 and deletes nothing', async () => {
        const before = await aState();
        await expectSameAsMissing((id) => `/deals/${id}`, a.dealId, { method: 'DELETE' });
        await expectAUnchanged(before);
      });

      it('POST /deals/{id}/analyze and /predict of A’s deal with B’s key answer the missing-deal 404 and store nothing', async () => {
        const before = await aState();
        for (const action of ['analyze', 'predict'])
          await expectSameAsMissing((id) => `/deals/${id}/${action}`, a.dealId, { method: 'POST' });
        await expectAUnchanged(before);
        expect(await s.sql('select id from deal_analyses where deal_id = ?', [a.dealId])).toHaveLength(0);
        expect(
          await s.sql(
            `select id from outbox_events where type = 'analysis.completed' and payload::jsonb->'data'->>'deal_id' = ?`,
            [a.dealId],
          ),
        ).toHaveLength(0);
      });

      it('PATCH of B’s own deal with A’s deal id in the body does not touch A', async () => {
        const before = await aState();
        const res = await s.api(`/deals/${b.dealId}`, {
          method: 'PATCH',
          key: keyB,
          json: { id: a.dealId, notes: 'aimed at A' },
        });
        expect(res.status).toBeLessThan(500);
        if (res.status === 200) expect(res.body.data.id).toBe(b.dealId);
        await expectAUnchanged(before);
      });
    });

    describe("another organization's contact answers 404 exactly like a missing one", () => {
      it('GET /contacts/{id} of A with B’s key answers the missing-contact 404', async () => {
        const before = await aState();
        await expectSameAsMissing((id) => `/contacts/${id}`, a.contactId);
        await expectAUnchanged(before);
      });

      it('PATCH /contacts/{id} of A with B’s key answers the missing-contact 404 and changes nothing', async () => {
        const before = await aState();
        await expectSameAsMissing((id) => `/contacts/${id}`, a.contactId, {
          method: 'PATCH',
          json: { name: 'Hijacked', sentiment: 'negative' },
        });
        await expectAUnchanged(before);
      });

      it('POST /contacts on A’s deal with B’s key answers the missing-deal 404 and stores nothing', async () => {
        const before = await aState();
        const contactsOfB = await countOf('contacts', s.orgB.orgId);
        for (const headers of [{}, { 'idempotency-key': `intruder-${driver}` }]) {
          const create = (dealId: string) =>
            s.api('/contacts', {
              method: 'POST',
              key: keyB,
              headers,
              json: { name: 'Intruder', deal_id: dealId },
            });
          const foreign = await create(a.dealId);
          const missing = await create(MISSING_ID);
          expect(missing.status).toBe(404);
          expect(foreign.status, foreign.text).toBe(404);
          expect(foreign.body).toEqual(missing.body);
        }
        expect(await countOf('contacts', s.orgB.orgId)).toBe(contactsOfB);
        expect(await s.sql("select id from contacts where name = 'Intruder'")).toHaveLength(0);
        await expectAUnchanged(before);
      });
    });

    describe("lists and searches with B's key show only B's rows", () => {
      it('GET /deals lists only B’s deals, and its total counts only them', async () => {
        const res = await s.api('/deals?limit=100', { key: keyB });
        expect(res.status).toBe(200);
        expect(ids(res)).toEqual([b.dealId]);
        expect(res.body.meta.total).toBe(await countOf('deals', s.orgB.orgId));
        expect(res.body.meta.total).toBe(1);
      });

      it('GET /deals filtered by A’s pipeline_id finds nothing', async () => {
        const res = await s.api(`/deals?pipeline_id=${a.pipelineId}`, { key: keyB });
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ data: [], meta: { total: 0, limit: 50, offset: 0, next_cursor: null } });
      });

      it('GET /deals filtered by lifecycle_stage finds only B’s deals', async () => {
        const res = await s.api('/deals?lifecycle_stage=lead', { key: keyB });
        expect(ids(res)).toEqual([b.dealId]);
        expect(res.body.meta.total).toBe(1);
      });

      it('GET /contacts lists only B’s contacts, and its total counts only them', async () => {
        const res = await s.api('/contacts?limit=100', { key: keyB });
        expect(res.status).toBe(200);
        expect(ids(res)).toEqual([b.contactId]);
        expect(res.body.meta.total).toBe(await countOf('contacts', s.orgB.orgId));
      });

      it('GET /contacts?q=<A’s contact name> finds only B’s contact of that name', async () => {
        const res = await s.api(`/contacts?q=${encodeURIComponent(SHARED_NAME)}`, { key: keyB });
        expect(res.status).toBe(200);
        expect(ids(res)).toEqual([b.contactId]);
        expect(res.body.meta.total).toBe(1);
        const byEmail = await s.api('/contacts?q=q%40a.example', { key: keyB });
        expect(byEmail.body).toEqual({
          data: [],
          meta: { total: 0, limit: 50, offset: 0, next_cursor: null },
        });
      });

      it('GET /search?q=<A’s deal title> finds only B’s deal and contact', async () => {
        const res = await s.api(`/search?q=${encodeURIComponent(SHARED_TITLE)}`, { key: keyB });
        expect(res.status).toBe(200);
        expect(res.body.data.deals.map((d: { id: string }) => d.id)).toEqual([b.dealId]);
        expect(res.text).not.toContain(a.dealId);
        expect(res.text).not.toContain('Zephyr A');

        const people = await s.api(`/search?q=${encodeURIComponent(SHARED_NAME)}`, { key: keyB });
        expect(people.body.data.contacts.map((c: { id: string }) => c.id)).toEqual([b.contactId]);
        expect(people.text).not.toContain(a.contactId);

        const company = await s.api('/search?q=Zephyr%20A', { key: keyB });
        expect(company.body.data).toEqual({ deals: [], contacts: [] });
      });

      it('GET /briefing and GET /coaching with B’s key count and list only B’s deals', async () => {
        const briefing = await s.api('/briefing', { key: keyB });
        expect(briefing.status).toBe(200);
        expect(briefing.body.data.summary.active_deals).toBe(1);
        expect(briefing.text).not.toContain(a.dealId);
        expect(briefing.text).not.toContain('Zephyr A');
        const mine = await s.api('/briefing', { key: keyA });
        expect(mine.body.data.summary.active_deals).toBe(3);
        expect(mine.body.data.summary.total_pipeline_value).toBe(1000);
        const coaching = await s.api('/coaching', { key: keyB });
        expect(coaching.status).toBe(200);
        expect(coaching.body.data).toMatchObject({ deals_won: 0, deals_lost: 0 });
      });

      it('the same searches with A’s key find A’s rows and not B’s', async () => {
        const res = await s.api(`/search?q=${encodeURIComponent(SHARED_TITLE)}`, { key: keyA });
        expect(res.body.data.deals.map((d: { id: string }) => d.id)).toEqual([a.dealId]);
        const people = await s.api(`/contacts?q=${encodeURIComponent(SHARED_NAME)}`, { key: keyA });
        expect(ids(people)).toEqual([a.contactId]);
      });
    });

    describe("A's pipeline is not B's", () => {
      it('GET /pipeline/stages answers different stage ids for A and B', async () => {
        expect(a.stageIds).toHaveLength(6);
        expect(b.stageIds).toHaveLength(6);
        expect(a.stageIds.filter((id) => b.stageIds.includes(id))).toEqual([]);
      });

      it('PATCH of a B deal with A’s stage or pipeline answers 400 with the same message as a missing one', async () => {
        const [before] = await s.sql('select * from deals where id = ?', [b.dealId]);
        for (const field of ['stage_id', 'pipeline_id'] as const) {
          const foreignId = field === 'stage_id' ? a.stageIds[1] : a.pipelineId;
          const patch = (id: string | undefined) =>
            s.api(`/deals/${b.dealId}`, { method: 'PATCH', key: keyB, json: { [field]: id, value: 7 } });
          const foreign = await patch(foreignId);
          const missing = await patch(MISSING_ID);
          expect(missing.status).toBe(400);
          expect(foreign.status, foreign.text).toBe(400);
          expect(foreign.body).toEqual(missing.body);
          expect(foreign.body.error).toMatch(new RegExp(field));
          expect(foreign.text).not.toContain(a.pipelineId);
        }
        const [after] = await s.sql('select * from deals where id = ?', [b.dealId]);
        expect(after).toEqual(before);
      });

      it('POST /deals with A’s stage or pipeline answers 400 like a missing one and stores nothing', async () => {
        const dealsOfB = await countOf('deals', s.orgB.orgId);
        for (const field of ['stage_id', 'pipeline_id'] as const) {
          const foreignId = field === 'stage_id' ? a.stageIds[1] : a.pipelineId;
          const foreign = await s.api('/deals', {
            method: 'POST',
            key: keyB,
            json: { title: 'Foreign stage', [field]: foreignId },
          });
          const missing = await s.api('/deals', {
            method: 'POST',
            key: keyB,
            json: { title: 'Foreign stage', [field]: MISSING_ID },
          });
          expect(missing.status).toBe(400);
          expect(foreign.status, foreign.text).toBe(400);
          expect(foreign.body).toEqual(missing.body);
          expect(foreign.body.error).toMatch(new RegExp(field));
        }
        expect(await countOf('deals', s.orgB.orgId)).toBe(dealsOfB);
        expect(await s.sql("select id from deals where title = 'Foreign stage'")).toHaveLength(0);
      });

      it('GET /pipeline/health counts only the caller’s deals', async () => {
        const openDeals = async (orgId: string) => {
          const [row] = await s.sql<{ n: unknown }>(
            `select count(*) as n from deals d join pipeline_stages st on st.id = d.stage_id
              where d.org_id = ? and st.stage_type = 'open'`,
            [orgId],
          );
          return Number(row?.n);
        };
        const healthA = await s.api('/pipeline/health', { key: keyA });
        const healthB = await s.api('/pipeline/health', { key: keyB });
        expect(healthA.status).toBe(200);
        expect(healthB.status).toBe(200);
        expect(healthA.body.data.total_deals).toBe(await openDeals(s.orgA.orgId));
        expect(healthB.body.data.total_deals).toBe(await openDeals(s.orgB.orgId));
        expect(healthA.body.data.total_deals).toBe(3);
        expect(healthB.body.data.total_deals).toBe(1);
      });
    });

    describe("B's usage is B's own", () => {
      it('GET /usage with B’s key counts only B’s calls and shows none of A’s alerts', async () => {
        await s.sql(
          `insert into usage_alerts (id, org_id, period, quota, threshold_percent, used, quota_limit, created_at)
           values (?, ?, to_char(now() at time zone 'UTC', 'YYYY-MM'), 'api_calls', 80, 8, 10, now())`,
          ['01890a5d-ac96-774b-bcce-b302099a8058', s.orgA.orgId],
        );
        const a = await s.api('/usage', { key: keyA });
        const b = await s.api('/usage', { key: keyB });
        expect(a.status).toBe(200);
        expect(b.status).toBe(200);
        expect(a.body.data.alerts).toHaveLength(1);
        expect(b.body.data.alerts).toEqual([]);
        // Each organization's count is its own: the header of the response and the body agree.
        expect(String(b.body.data.quotas.api_calls.used)).toBe(b.headers.get('x-api-quota-used'));
        expect(String(a.body.data.quotas.api_calls.used)).toBe(a.headers.get('x-api-quota-used'));
        expect(a.body.data.quotas.api_calls.used).not.toBe(b.body.data.quotas.api_calls.used);
      });
    });

    describe("another organization's webhook answers 404 exactly like a missing one", () => {
      const hooks = { a: '', b: '', deliveryA: '' };
      beforeAll(async () => {
        const create = (key: string) =>
          post('/webhooks', key, { url: 'http://127.0.0.1:9/closed', events: ['deal.created'] });
        hooks.a = (await create(keyA)).id;
        hooks.b = (await create(keyB)).id;
        await post('/deals', keyA, { title: 'Fans out to A only' });
        for (let i = 0; i < 200 && !hooks.deliveryA; i++) {
          const list = await s.api(`/webhooks/${hooks.a}/deliveries`, { key: keyA });
          hooks.deliveryA = list.body.data[0]?.id ?? '';
          if (!hooks.deliveryA) await new Promise((r) => setTimeout(r, 50));
        }
        expect(hooks.deliveryA).not.toBe('');
      });
      const aWebhookUnchanged = async () => {
        const listed = (await s.api('/webhooks', { key: keyA })).body.data;
        expect(listed.map((w: { id: string }) => w.id)).toEqual([hooks.a]);
      };

      it('GET /webhooks with B’s key lists only B’s endpoint', async () => {
        const res = await s.api('/webhooks', { key: keyB });
        expect(res.body.data.map((w: { id: string }) => w.id)).toEqual([hooks.b]);
        expect(res.text).not.toContain(hooks.a);
      });

      it('DELETE, activate and the deliveries list of A’s webhook with B’s key answer the missing 404', async () => {
        await expectSameAsMissing((id) => `/webhooks/${id}`, hooks.a, { method: 'DELETE' });
        await expectSameAsMissing((id) => `/webhooks/${id}/activate`, hooks.a, { method: 'POST' });
        await expectSameAsMissing((id) => `/webhooks/${id}/deliveries`, hooks.a);
        await aWebhookUnchanged();
      });

      it('replaying A’s delivery with B’s key answers 404, through A’s webhook or B’s own', async () => {
        const before = await s.sql('select count(*) as n from webhook_deliveries');
        await expectSameAsMissing((id) => `/webhooks/${id}/deliveries/${hooks.deliveryA}/replay`, hooks.a, {
          method: 'POST',
        });
        await expectSameAsMissing((id) => `/webhooks/${hooks.b}/deliveries/${id}/replay`, hooks.deliveryA, {
          method: 'POST',
        });
        expect(await s.sql('select count(*) as n from webhook_deliveries')).toEqual(before);
      });

      it('A’s events are never fanned out to B’s endpoints', async () => {
        const res = await s.api(`/webhooks/${hooks.b}/deliveries`, { key: keyB });
        expect(res.body).toEqual({ data: [], meta: { total: 0, limit: 50, offset: 0 } });
      });
    });

    describe('over tRPC', () => {
      it('deals.get of A’s deal with B’s key rejects with a 404 like a missing deal', async () => {
        const client = s.trpc(s.orgB);
        const foreign = await client.deals.get.query({ id: a.dealId }).then(
          () => undefined,
          (err: unknown) => err,
        );
        const missing = await client.deals.get.query({ id: MISSING_ID }).then(
          () => undefined,
          (err: unknown) => err,
        );
        expect(foreign).toBeInstanceOf(CrmError);
        expect(missing).toBeInstanceOf(CrmError);
        expect(foreign).toMatchObject({ status: 404, body: { error: 'Deal not found', code: 'not_found' } });
        expect((foreign as CrmError).body).toEqual((missing as CrmError).body);
        expect((foreign as Error).message).toBe((missing as Error).message);
      });

      it('contacts.get, deals.update and ai.analyze/predict of A’s rows with B’s key reject with 404 and change nothing', async () => {
        const before = await aState();
        const client = s.trpc(s.orgB);
        await expect(client.contacts.get.query({ id: a.contactId })).rejects.toMatchObject({ status: 404 });
        await expect(client.deals.update.mutate({ id: a.dealId, title: 'Hijacked' })).rejects.toMatchObject({
          status: 404,
        });
        await expect(client.deals.delete.mutate({ id: a.dealId })).rejects.toMatchObject({ status: 404 });
        await expect(client.ai.analyze.mutate({ id: a.dealId })).rejects.toMatchObject({ status: 404 });
        await expect(client.ai.predict.mutate({ id: a.dealId })).rejects.toMatchObject({ status: 404 });
        const list = await client.deals.list.query({ limit: 100 });
        expect(list.data.map((d) => d.id)).toEqual([b.dealId]);
        await expectAUnchanged(before);
      });
    });
  });
}
