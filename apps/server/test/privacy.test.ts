import { issueApiKey } from '@crm/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVERS, startTestServer, type TestOrg, type TestServer } from './harness.ts';

/** What identifies the person: none of it may be anywhere once they are erased. */
const NAME = 'Zelda Quuxwell';
const EMAIL = 'zelda@quux-erase.example';
const PHONE = '+1 555 0199';

for (const { driver, label, skip } of DRIVERS) {
  describe.skipIf(skip)(`a person's export and erasure on ${label}`, () => {
    let s: TestServer;
    let org: TestOrg;
    beforeAll(async () => {
      s = await startTestServer(driver);
      org = await s.newOrg(`privacy ${Math.random()}`);
    });
    afterAll(async () => {
      await s?.stop();
    });
    const api = (path: string, init: Parameters<TestServer['api']>[1] = {}) =>
      s.api(path, { key: org.apiKey, ...init });

    /** Every row of every text or json column of the database that holds one of the person's identifiers. */
    async function traces(): Promise<string[]> {
      const columns = await s.sql<{ table_name: string; column_name: string }>(
        `select table_name, column_name from information_schema.columns
          where table_schema = current_schema() and data_type in ('text', 'jsonb', 'json', 'character varying')`,
      );
      const found: string[] = [];
      for (const { table_name, column_name } of columns) {
        const [row] = await s.sql<{ n: string | number }>(
          `select count(*) as n from "${table_name}" where "${column_name}"::text ilike any (array[?, ?, ?])`,
          ['%Quuxwell%', '%quux-erase%', '%555 0199%'],
        );
        if (Number(row?.n) > 0) found.push(`${table_name}.${column_name}: ${row?.n}`);
      }
      return found;
    }

    it('exports everything about a person in one document, then erases them from the database and the feed', async () => {
      const deal = (
        await api('/deals', {
          method: 'POST',
          json: { title: 'Quux rollout', contact_name: NAME, contact_email: EMAIL },
        })
      ).body.data;
      const other = (await api('/deals', { method: 'POST', json: { title: 'Renewal' } })).body.data;
      const made = await api('/contacts', {
        method: 'POST',
        headers: { 'Idempotency-Key': 'privacy-1' },
        json: { name: NAME, email: EMAIL, phone: PHONE, deal_id: deal.id, role_type: 'champion' },
      });
      expect(made.status, made.text).toBe(201);
      const id = made.body.data.id;
      expect(
        (
          await api(`/contacts/${id}`, {
            method: 'PATCH',
            json: { sentiment: 'positive', notes: `${NAME} likes us` },
          })
        ).status,
      ).toBe(200);
      expect(
        (
          await api(`/deals/${other.id}/stakeholders/${id}`, {
            method: 'PUT',
            json: { role_type: 'influencer' },
          })
        ).status,
      ).toBe(200);
      expect((await api(`/deals/${deal.id}/analyze`, { method: 'POST' })).status).toBe(200);

      const exported = await api(`/contacts/${id}/export`);
      expect(exported.status, exported.text).toBe(200);
      const doc = exported.body.data;
      expect(doc.contact).toMatchObject({ id, name: NAME, email: EMAIL, phone: PHONE });
      expect(doc.deals.map((d: { deal_id: string; role_type: string }) => [d.deal_id, d.role_type])).toEqual([
        [deal.id, 'champion'],
        [other.id, 'influencer'],
      ]);
      expect(doc.activities.map((a: { type: string }) => a.type)).toEqual([
        'contact_added',
        'contact_updated',
        'stakeholder_added',
      ]);
      expect(doc.events.map((e: { type: string }) => e.type)).toEqual([
        'contact.created',
        'contact.updated',
        'deal.stakeholder_added',
      ]);
      expect((await traces()).length).toBeGreaterThan(0);

      // Erasing takes a scope of its own.
      const { api_key: writer } = await issueApiKey(s.running.db.orm.em.fork(), org.orgId, {
        scopes: ['contacts:read', 'contacts:write'],
      });
      const refused = await api(`/contacts/${id}/erase`, { key: writer, method: 'POST' });
      expect(refused.status).toBe(403);

      const erased = await api(`/contacts/${id}/erase`, { method: 'POST' });
      expect(erased.status, erased.text).toBe(200);
      expect(erased.body.data).toMatchObject({
        contact_id: id,
        removed: { contacts: 1, activities_redacted: 3 },
      });
      expect(erased.text).not.toMatch(/Quuxwell|quux-erase|555 0199/);

      // Nowhere in the database, nor in the feed, nor in a retried create's stored answer.
      expect(await traces()).toEqual([]);
      expect((await api('/events?limit=100')).text).not.toMatch(/Quuxwell|quux-erase/);
      expect((await api(`/contacts/${id}`)).status).toBe(404);
      expect((await api(`/deals/${deal.id}`)).body.data.stakeholders).toEqual([]);
      expect((await api(`/deals/${deal.id}`)).body.data.deal).toMatchObject({
        contact_name: null,
        contact_email: null,
      });
      const retried = await api('/contacts', {
        method: 'POST',
        headers: { 'Idempotency-Key': 'privacy-1' },
        json: { name: NAME, email: EMAIL, phone: PHONE, deal_id: deal.id, role_type: 'champion' },
      });
      expect(retried.body).toEqual({ data: { id, erased: true } });
      // The receipt stays, without personal data.
      const [receipt] = await s.sql<{ removed: unknown }>(
        'select removed from erasure_receipts where contact_id = ?',
        [id],
      );
      expect(receipt).toBeDefined();
      expect((await api(`/contacts/${id}/erase`, { method: 'POST' })).status).toBe(404);
    });
  });
}
