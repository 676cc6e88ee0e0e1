import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeOnEachDatabase, startTestServer, type TestServer } from './harness.ts';

/**
 * A large organization's search (docs/development.md: Search at scale): its newest rows first (2,000 by default), then,
 * for a term rarer than that, every match over the trigram indexes. The server here takes every
 * organization for a large one and reads its 20 newest rows first (CRM_SEARCH_PLAIN_UP_TO=0,
 * CRM_SEARCH_NEWEST_WINDOW=20), so a hundred rows exercise both branches; each answer is compared with
 * what the lists show, newest first.
 */
const WINDOW = 20;
const DEALS = 100;
const CONTACTS = 60;

const dealTitle = (i: number) =>
  i < 25
    ? `Mixed early ${i}`
    : i < 30
      ? `Rare early ${i}`
      : i >= DEALS - 5
        ? `Deal mixed late ${i}`
        : `Deal ${i}`;
const contactName = (i: number) => (i < 3 ? `Zed early ${i}` : `Person ${i}`);

describeOnEachDatabase(
  (label) => `search of a large organization on ${label}`,
  (driver) => {
    let s: TestServer;
    let key: string;
    /** Every deal and contact, newest first, as GET /deals and GET /contacts list them. */
    let deals: Array<{ id: string; title: string }>;
    let contacts: Array<{ id: string; name: string }>;

    const all = async <T>(path: string) => {
      const rows: T[] = [];
      let after: string | null = null;
      do {
        const res = await s.api(`${path}?limit=100${after ? `&after=${after}` : ''}`, { key });
        expect(res.status).toBe(200);
        rows.push(...res.body.data);
        after = res.body.meta.next_cursor;
      } while (after);
      return rows;
    };

    beforeAll(async () => {
      s = await startTestServer(driver, {
        CRM_SEARCH_PLAIN_UP_TO: '0',
        CRM_SEARCH_NEWEST_WINDOW: String(WINDOW),
      });
      key = (await s.newOrg('Large search org')).apiKey;
      for (let i = 0; i < DEALS; i += 100) {
        const items = Array.from({ length: Math.min(100, DEALS - i) }, (_, k) => ({
          title: dealTitle(i + k),
        }));
        const res = await s.api('/deals/batch', { method: 'POST', key, json: { items } });
        expect(res.status).toBe(201);
      }
      const dealId = (await s.api('/deals?limit=1', { key })).body.data[0].id;
      for (let i = 0; i < CONTACTS; i += 100) {
        const items = Array.from({ length: Math.min(100, CONTACTS - i) }, (_, k) => ({
          name: contactName(i + k),
          deal_id: dealId,
        }));
        const res = await s.api('/contacts/batch', { method: 'POST', key, json: { items } });
        expect(res.status).toBe(201);
      }
      deals = await all('/deals');
      contacts = await all('/contacts');
      expect(deals).toHaveLength(DEALS);
      expect(contacts).toHaveLength(CONTACTS);
    }, 120_000);
    afterAll(async () => {
      await s?.stop();
    });

    /** The search's answer, and the ids of each list. */
    const searchFor = async (q: string) => {
      const res = await s.api(`/search?q=${encodeURIComponent(q)}`, { key });
      expect(res.status).toBe(200);
      return res.body.data as { deals: Array<{ id: string }>; contacts: Array<{ id: string }> };
    };
    const search = async (q: string) => {
      const found = await searchFor(q);
      return { deals: found.deals.map((d) => d.id), contacts: found.contacts.map((c) => c.id) };
    };
    /** The ids of the 20 newest rows (of a list newest first) whose `text` contains q, case-insensitive. */
    const newest = <T extends { id: string }>(rows: T[], text: (row: T) => string, q: string) =>
      rows
        .filter((row) => text(row).toLowerCase().includes(q.toLowerCase()))
        .slice(0, 20)
        .map((row) => row.id);
    const newestDeals = (q: string) => newest(deals, (d) => d.title, q);
    const newestContacts = (q: string) => newest(contacts, (c) => c.name, q);

    it('answers a common term from the newest rows: the 20 newest matches', async () => {
      const found = await searchFor('deal');
      expect(found.deals.map((d) => d.id)).toEqual(newestDeals('deal'));
      expect(found.deals).toHaveLength(20);
      expect(found.deals[0]).toEqual({
        id: deals[0]?.id,
        title: deals[0]?.title,
        company_name: null,
        stage: 'Lead',
        value: null,
        health: null,
        win_probability: null,
      });
      const people = await searchFor('person');
      expect(people.contacts.map((c) => c.id)).toEqual(newestContacts('person'));
      expect(people.contacts).toHaveLength(20);
      expect(people.contacts[0]).toEqual({
        id: contacts[0]?.id,
        name: contacts[0]?.name,
        email: null,
        title: null,
        role_type: 'unknown',
        deal_id: deals[0]?.id,
        deal_title: deals[0]?.title,
        company: null,
      });
    });

    it('finds a term whose matches are all older than the newest rows it reads first', async () => {
      const found = await search('rare early');
      expect(found.deals).toEqual(newestDeals('rare early'));
      expect(found.deals).toHaveLength(5);
      const zed = await search('zed early');
      expect(zed.contacts).toEqual(newestContacts('zed early'));
      expect(zed.contacts).toHaveLength(3);
    });

    it('completes a term with a few recent matches by the older ones, newest first', async () => {
      const found = await search('mixed');
      expect(found.deals).toEqual(newestDeals('mixed'));
      expect(found.deals).toHaveLength(20);
      expect(found.deals.slice(0, 5)).toEqual(deals.slice(0, 5).map((d) => d.id));
    });

    it('answers an unknown term with empty lists, and stays inside its organization', async () => {
      expect(await search('nothing like this')).toEqual({ deals: [], contacts: [] });
      const other = await s.newOrg('Other org');
      const created = await s.api('/deals', {
        method: 'POST',
        key: other.apiKey,
        json: { title: 'Deal of another org' },
      });
      const theirs = await s.api('/search?q=deal', { key: other.apiKey });
      expect(theirs.body.data.deals.map((d: { id: string }) => d.id)).toEqual([created.body.data.id]);
      expect(await search('another org')).toEqual({ deals: [], contacts: [] });
    });
  },
);
