import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVERS, MISSING_ID, startTestServer, type TestServer } from './harness.ts';

for (const { driver, label, skip } of DRIVERS) {
  describe.skipIf(skip)(`batch creates on ${label}`, () => {
    let s: TestServer;
    beforeAll(async () => {
      s = await startTestServer(driver);
    });
    afterAll(async () => {
      await s?.stop();
    });

    const used = async (key: string) =>
      (await s.api('/usage', { key })).body.data.quotas.api_calls.used as number;

    it('answers another method on /deals/batch or /contacts/batch 405 with Allow: POST, not a 400 about an id', async () => {
      for (const [method, path] of [
        ['GET', '/deals/batch'],
        ['PATCH', '/deals/batch'],
        ['DELETE', '/contacts/batch'],
      ] as const) {
        const res = await s.api(path, { method });
        expect(res.status, `${method} ${path}`).toBe(405);
        expect(res.headers.get('allow')).toBe('POST');
        expect(res.body.code).toBe('method_not_allowed');
      }
      // A templated path still takes an id of any other shape.
      expect((await s.api(`/deals/${MISSING_ID}`)).status).toBe(404);
    });

    it('creates every deal in order, each with its activity and event, and counts each item as a call', async () => {
      const org = await s.newOrg('Batch org');
      const before = await used(org.apiKey);
      const items = Array.from({ length: 25 }, (_, i) => ({ title: `Imported ${i}`, value: 1000 + i }));
      const res = await s.api('/deals/batch', { method: 'POST', key: org.apiKey, json: { items } });
      expect(res.status).toBe(201);
      expect(res.body.data.map((d: { title: string }) => d.title)).toEqual(items.map((i) => i.title));
      // The usage call before, the batch's 25 items, and this usage call.
      expect(await used(org.apiKey)).toBe(before + 25 + 1);
      const [counts] = await s.sql<{ activities: string | number; events: string | number }>(
        `select (select count(*) from activities where org_id = ? and type = 'deal_created') as activities,
                (select count(*) from outbox_events where org_id = ? and type = 'deal.created') as events`,
        [org.orgId, org.orgId],
      );
      expect(Number(counts?.activities)).toBe(25);
      expect(Number(counts?.events)).toBe(25);
      expect((await s.api('/deals?limit=1', { key: org.apiKey })).body.meta.total).toBe(25);

      const deal = res.body.data[0].id as string;
      const contacts = await s.api('/contacts/batch', {
        method: 'POST',
        key: org.apiKey,
        json: {
          items: [
            { name: 'Ann', deal_id: deal, role_type: 'champion' },
            { name: 'Bo', deal_id: deal },
          ],
        },
      });
      expect(contacts.status).toBe(201);
      expect(contacts.body.data.map((c: { name: string }) => c.name)).toEqual(['Ann', 'Bo']);
      expect((await s.api(`/deals/${deal}`, { key: org.apiKey })).body.data.stakeholders).toHaveLength(2);
    });

    it('is all or nothing, and names the failing item’s index', async () => {
      const org = await s.newOrg('Batch failure org');
      const invalid = await s.api('/deals/batch', {
        method: 'POST',
        key: org.apiKey,
        json: { items: [{ title: 'ok' }, { title: 'ok too' }, { title: '' }] },
      });
      expect(invalid.status).toBe(400);
      expect(invalid.body.error).toMatch(/^items\[2\]\.title: /);
      const badStage = await s.api('/deals/batch', {
        method: 'POST',
        key: org.apiKey,
        json: { items: [{ title: 'first' }, { title: 'second', stage_id: MISSING_ID }] },
      });
      expect(badStage.status).toBe(400);
      expect(badStage.body.error).toMatch(/^items\[1\]\.stage_id: /);
      const [{ n } = { n: -1 }] = await s.sql<{ n: string | number }>(
        'select count(*) as n from deals where org_id = ?',
        [org.orgId],
      );
      expect(Number(n)).toBe(0);
      expect(await s.sql('select id from outbox_events where org_id = ?', [org.orgId])).toEqual([]);

      const created = await s.api('/deals', {
        method: 'POST',
        key: org.apiKey,
        json: { title: 'Has contacts' },
      });
      const missingDeal = await s.api('/contacts/batch', {
        method: 'POST',
        key: org.apiKey,
        json: {
          items: [
            { name: 'A', deal_id: created.body.data.id },
            { name: 'B', deal_id: MISSING_ID },
          ],
        },
      });
      expect(missingDeal.status).toBe(404);
      expect(missingDeal.body).toEqual({ error: 'items[1]: Deal not found', code: 'not_found' });
      expect(await s.sql('select id from contacts where org_id = ?', [org.orgId])).toEqual([]);

      for (const body of [
        { items: [] },
        { items: Array.from({ length: 101 }, () => ({ title: 'x' })) },
        { item: [] },
      ]) {
        const res = await s.api('/deals/batch', { method: 'POST', key: org.apiKey, json: body });
        expect(res.status).toBe(400);
        expect(res.body.error).toMatch(/items|item/);
      }
    });

    it('a batch the monthly quota cannot take answers 429 and creates nothing', async () => {
      const org = await s.newOrg('Batch quota org', { api_calls: 10 });
      const res = await s.api('/deals/batch', {
        method: 'POST',
        key: org.apiKey,
        json: { items: Array.from({ length: 20 }, (_, i) => ({ title: `q${i}` })) },
      });
      expect(res.status).toBe(429);
      expect(res.body).toMatchObject({
        code: 'api_quota_exceeded',
        limit: 10,
        retry_after_seconds: expect.any(Number),
      });
      expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
      const [{ n } = { n: -1 }] = await s.sql<{ n: string | number }>(
        'select count(*) as n from deals where org_id = ?',
        [org.orgId],
      );
      expect(Number(n)).toBe(0);
      const small = await s.api('/deals/batch', {
        method: 'POST',
        key: org.apiKey,
        json: { items: [{ title: 'fits' }, { title: 'fits too' }] },
      });
      expect(small.status).toBe(201);
    });

    it('honours Idempotency-Key: a retried batch answers the first result and creates once', async () => {
      const org = await s.newOrg('Batch retry org');
      const init = {
        method: 'POST',
        key: org.apiKey,
        json: { items: [{ title: 'once' }, { title: 'twice?' }] },
        headers: { 'idempotency-key': 'batch-1' },
      };
      const first = await s.api('/deals/batch', init);
      const second = await s.api('/deals/batch', init);
      expect(second.status).toBe(201);
      expect(second.body).toEqual(first.body);
      expect(second.headers.get('idempotent-replayed')).toBe('true');
      expect((await s.api('/deals?limit=1', { key: org.apiKey })).body.meta.total).toBe(2);
      // The same key with other items (the same count) is another request: 422, nothing created.
      const other = await s.api('/deals/batch', {
        ...init,
        json: { items: [{ title: 'once' }, { title: 'other' }] },
      });
      expect(other.status).toBe(422);
      expect((await s.api('/deals?limit=1', { key: org.apiKey })).body.meta.total).toBe(2);
    });
  });
}
