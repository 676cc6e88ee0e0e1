import { GIN_INDEXES } from '@crm/db';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeOnEachDatabase, startTestServer, type TestServer } from './harness.ts';

/**
 * A large organization's search (docs/api/lists-and-search.md: Search): values equal to the term, then
 * beginning with it, read down the prefix indexes; then the matches inside a value, from its newest rows
 * first (2,000 by default), then, for a term rarer than that, every match over the trigram indexes. The
 * server here takes every organization for a large one and reads its 20 newest rows first
 * (CRM_SEARCH_PLAIN_UP_TO=0, CRM_SEARCH_NEWEST_WINDOW=20), so a hundred rows exercise every branch; each
 * answer is compared with the ranking recomputed from what the lists show.
 */
const WINDOW = 20;
const DEALS = 100;
const CONTACTS = 60;

const dealTitle = (i: number) =>
  i < 25
    ? `Early ${i} mixed`
    : i < 30
      ? `Early ${i} rare`
      : i >= DEALS - 5
        ? `Deal late ${i} mixed`
        : i === 50
          ? 'Deal'
          : i === 60
            ? 'Mixed 60'
            : `Deal ${i}`;
const contactName = (i: number) => (i < 3 ? `Early ${i} zed` : `Person ${i}`);

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
      return res.body.data as {
        deals: Array<{ id: string; title: string }>;
        contacts: Array<{ id: string }>;
      };
    };
    const search = async (q: string) => {
      const found = await searchFor(q);
      return { deals: found.deals.map((d) => d.id), contacts: found.contacts.map((c) => c.id) };
    };
    /**
     * The ids of the 20 best rows (of a list newest first) for q, as the search ranks them: a value equal
     * to q (0), then beginning with it (1), by the value byte by byte; then (2) containing it; then newest.
     */
    const best = <T extends { id: string }>(rows: T[], text: (row: T) => string, q: string) => {
      const lq = q.toLowerCase();
      return rows
        .map((row, i) => {
          const v = text(row).toLowerCase();
          const r = v === lq ? 0 : v.startsWith(lq) ? 1 : v.includes(lq) ? 2 : 3;
          return { id: row.id, r, k: r < 2 ? v : '', i };
        })
        .filter((x) => x.r < 3)
        .sort((a, b) => a.r - b.r || (a.k < b.k ? -1 : a.k > b.k ? 1 : 0) || a.i - b.i)
        .slice(0, 20)
        .map((x) => x.id);
    };
    const bestDeals = (q: string) => best(deals, (d) => d.title, q);
    const bestContacts = (q: string) => best(contacts, (c) => c.name, q);

    it('puts the title equal to the term first, then those beginning with it, by value', async () => {
      const found = await searchFor('deal');
      expect(found.deals.map((d) => d.id)).toEqual(bestDeals('deal'));
      expect(found.deals).toHaveLength(20);
      const exact = deals.find((d) => d.title === 'Deal');
      expect(found.deals[0]).toEqual({
        id: exact?.id,
        title: 'Deal',
        company_name: null,
        stage: 'Lead',
        value: null,
        health: null,
        win_probability: null,
        custom: {},
      });
      expect(found.deals[1]?.title).toBe('Deal 30');
      const people = await searchFor('person');
      expect(people.contacts.map((c) => c.id)).toEqual(bestContacts('person'));
      expect(people.contacts).toHaveLength(20);
      const first = contacts.find((c) => c.name === 'Person 10');
      expect(people.contacts[0]).toEqual({
        id: first?.id,
        name: 'Person 10',
        email: null,
        title: null,
        role_type: 'unknown',
        deal_id: deals[0]?.id,
        deal_title: deals[0]?.title,
        company: null,
        custom: {},
      });
    });

    it('completes the one title beginning with a term by the newest that contain it', async () => {
      const found = await search('mixed');
      expect(found.deals).toEqual(bestDeals('mixed'));
      expect(found.deals).toHaveLength(20);
      expect(found.deals[0]).toBe(deals.find((d) => d.title === 'Mixed 60')?.id);
      expect(found.deals.slice(1, 6)).toEqual(deals.slice(0, 5).map((d) => d.id));
    });

    it('finds a term whose matches are all older than the newest rows it reads first', async () => {
      const found = await search('rare');
      expect(found.deals).toEqual(bestDeals('rare'));
      expect(found.deals).toHaveLength(5);
      const zed = await search('zed');
      expect(zed.contacts).toEqual(bestContacts('zed'));
      expect(zed.contacts).toHaveLength(3);
    });

    it('reads the values beginning with a term in order, however few', async () => {
      const found = await search('early 2');
      expect(found.deals).toEqual(bestDeals('early 2'));
      expect(found.deals).toHaveLength(11);
      const byPrefix = await search('deal late');
      expect(byPrefix.deals).toEqual(bestDeals('deal late'));
      expect(byPrefix.deals).toHaveLength(5);
    });

    it('says how many matched, exactly up to the bound', async () => {
      const res = await s.api('/search?q=deal', { key });
      expect(res.body.meta).toEqual({
        deals: { total: deals.filter((d) => d.title.toLowerCase().includes('deal')).length, exact: true },
        contacts: { total: 0, exact: true },
        count_bound: 1000,
      });
      const listed = await s.api('/contacts?q=person&limit=5', { key });
      expect(listed.body.meta).toMatchObject({ total: CONTACTS - 3 });
      expect(listed.body.meta).not.toHaveProperty('total_exact');
    });

    it('says "more than 1,000" past the bound, from a prefix index or from the matches inside values', async () => {
      const big = (await s.newOrg('Past the bound')).apiKey;
      for (let i = 0; i < 1001; i += 100) {
        const items = Array.from({ length: Math.min(100, 1001 - i) }, (_, k) => ({
          title: `Bound ${i + k}`,
          company_name: `Inner bound ${(i + k) % 7}`,
        }));
        expect((await s.api('/deals/batch', { method: 'POST', key: big, json: { items } })).status).toBe(201);
      }
      const prefix = await s.api('/search?q=bound', { key: big });
      expect(prefix.body.meta.deals).toEqual({ total: 1000, exact: false });
      expect(prefix.body.data.deals[0].title).toBe('Bound 0');
      const inner = await s.api('/search?q=ner%20bound', { key: big });
      expect(inner.body.meta.deals).toEqual({ total: 1000, exact: false });
      expect(inner.body.data.deals).toHaveLength(20);
      const exact = await s.api('/search?q=bound%2099', { key: big });
      expect(exact.body.meta.deals).toEqual({ total: 11, exact: true });
    }, 120_000);

    it('GET /contacts?q= reads few matches by their ids: newest first, paged by offset and after, exact', async () => {
      // The server's plain query is held to no rows (CRM_SEARCH_PLAIN_UP_TO=0): every exact count is read
      // by ids (pageByQ), as a million-contact organization's sparse matches are.
      const list = async (query: string) => {
        const res = await s.api(`/contacts?${query}`, { key });
        expect(res.status, res.text).toBe(200);
        return res.body as { data: Array<{ id: string }>; meta: Record<string, unknown> };
      };
      const matching = (q: string) =>
        contacts.filter((c) => c.name.toLowerCase().includes(q)).map((c) => c.id);
      for (const q of ['zed', 'person 1', 'early 1 zed', 'nobody here']) {
        const want = matching(q);
        const whole = await list(`q=${encodeURIComponent(q)}&limit=100`);
        expect(whole.data.map((c) => c.id)).toEqual(want);
        expect(whole.meta.total).toBe(want.length);
        expect(whole.meta.total_exact).toBeUndefined();
        const byOffset = await list(`q=${encodeURIComponent(q)}&limit=2&offset=1`);
        expect(byOffset.data.map((c) => c.id)).toEqual(want.slice(1, 3));
        const walked: string[] = [];
        let after: string | null = null;
        do {
          const page = await list(`q=${encodeURIComponent(q)}&limit=3${after ? `&after=${after}` : ''}`);
          walked.push(...page.data.map((c) => c.id));
          after = page.meta.next_cursor as string | null;
        } while (after);
        expect(walked).toEqual(want);
      }
    });

    it('GET /contacts?q= counts a term dense in the newest contacts by a walk, a sparse one by its ids: both exact', async () => {
      // 260 contacts: every twentieth "Sparse" (13; 10 of the newest 200, which tell a term's density),
      // the rest "Dense" (247). Each answer is what the whole list, filtered, shows.
      const org = (await s.newOrg('Dense and sparse')).apiKey;
      const dealId = (await s.api('/deals', { method: 'POST', key: org, json: { title: 'Their deal' } })).body
        .data.id;
      const N = 260;
      for (let i = 0; i < N; i += 100) {
        const items = Array.from({ length: Math.min(100, N - i) }, (_, k) => ({
          name: `${(i + k) % 20 === 0 ? 'Sparse' : 'Dense'} row ${i + k}`,
          deal_id: dealId,
        }));
        expect((await s.api('/contacts/batch', { method: 'POST', key: org, json: { items } })).status).toBe(
          201,
        );
      }
      const everyContact: Array<{ id: string; name: string }> = [];
      for (let after: string | null = null; ; ) {
        const res = await s.api(`/contacts?limit=100${after ? `&after=${after}` : ''}`, { key: org });
        everyContact.push(...res.body.data);
        after = res.body.meta.next_cursor;
        if (!after) break;
      }
      expect(everyContact).toHaveLength(N);
      for (const [q, total] of [
        ['sparse', 13],
        ['dense', 247],
        ['ense ro', 247],
        ['row', 260],
      ] as const) {
        const want = everyContact.filter((c) => c.name.toLowerCase().includes(q)).map((c) => c.id);
        expect(want).toHaveLength(total);
        const res = await s.api(`/contacts?q=${encodeURIComponent(q)}&limit=30&offset=10`, { key: org });
        expect(res.status, res.text).toBe(200);
        expect(res.body.meta).toEqual({
          total,
          limit: 30,
          offset: 10,
          next_cursor: total > 40 ? want[39] : null,
        });
        expect(res.body.data.map((c: { id: string }) => c.id)).toEqual(want.slice(10, 40));
      }
    }, 120_000);

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

    it('finds several words wherever they stand in a deal, and answers none when no deal holds them all', async () => {
      const titles = async (q: string, k = key) => {
        const res = await s.api(`/search?q=${encodeURIComponent(q)}`, { key: k });
        expect(res.status).toBe(200);
        return {
          titles: res.body.data.deals.map((d: { title: string }) => d.title),
          meta: res.body.meta.deals,
        };
      };
      // Each word in many deals: together in some, in any order, whole or as the beginnings of words.
      const together = await titles('mixed early');
      expect(together.meta).toEqual({ total: 25, exact: true });
      expect(together.titles.every((t: string) => /^Early \d+ mixed$/.test(t))).toBe(true);
      expect((await titles('lat mix')).meta).toEqual({ total: 5, exact: true });
      expect(await titles('deal rare')).toEqual({ titles: [], meta: { total: 0, exact: true } });
      // One word in the title and one in the company name: still the deal's words.
      const other = await s.newOrg('Words across fields');
      const res = await s.api('/deals/batch', {
        method: 'POST',
        key: other.apiKey,
        json: {
          items: [
            { title: 'Renewal', company_name: 'Hooli Systems' },
            { title: 'Hooli expansion', company_name: 'Acme' },
            { title: 'Renewal', company_name: 'Acme' },
          ],
        },
      });
      expect(res.status).toBe(201);
      for (const q of ['hooli renewal', 'renewal hooli', 'hoo renew', 'Renewal, Hooli!'])
        expect((await titles(q, other.apiKey)).titles, q).toEqual(['Renewal']);
      expect((await titles('acme hooli', other.apiKey)).titles).toEqual(['Hooli expansion']);
      expect(await titles('acme globex', other.apiKey)).toEqual({
        titles: [],
        meta: { total: 0, exact: true },
      });
      // Terms whose text holds more than their words: the parser drops `https` and `<foo>`, and splits
      // `1e5abc`; a deal matches by the words it keeps (each an organization of its own: its one deal
      // holds no whole word of the term, so the gate is asked).
      for (const [q, title, company_name] of [
        ['https://acme.com', 'Renewal', 'acme.com.au'],
        ['1e5abc renewal', '1e50 abcd renewals', null],
        ['1.5abc plan', '1.5 abcd plans', null],
        ['<foo> bar baz', 'barn bazaar', null],
        ['&copy; acme renewal', 'Acme Renewals', null],
      ] as const) {
        const org = await s.newOrg(`Words of ${q}`);
        const made = await s.api('/deals', {
          method: 'POST',
          key: org.apiKey,
          json: company_name ? { title, company_name } : { title },
        });
        expect(made.status, made.text).toBe(201);
        expect(await titles(q, org.apiKey), q).toEqual({ titles: [title], meta: { total: 1, exact: true } });
      }
    });

    it('finds a term inside values by its trigrams, and only where the whole term stands', async () => {
      const org = await s.newOrg('Trigrams of a term');
      const made = await s.api('/deals/batch', {
        method: 'POST',
        key: org.apiKey,
        json: {
          items: [
            { title: 'Renewal 2027' },
            // Every trigram of `renewal` (ren, ene, new, ewa, wal), not the word.
            { title: 'Rene newal' },
            // A digit the database's letter-or-digit class may not count: the term's own pattern then.
            { title: 'Seats ab½ plan' },
            // Σ lower-cases by what follows it under ICU: a term of it is read without its trigrams.
            { title: 'ΑΒΟΣΑ plan' },
          ],
        },
      });
      expect(made.status, made.text).toBe(201);
      const dealId = made.body.data[0].id;
      const people = await s.api('/contacts/batch', {
        method: 'POST',
        key: org.apiKey,
        json: {
          items: [
            { name: 'Anna Smith', email: 'anna.smith999993@example.com', deal_id: dealId },
            // Every trigram of `smith999993@exam`, in pieces.
            { name: 'Decoy', title: 'smith999 h9993 exam', deal_id: dealId },
            { name: 'Lena Müllerstraße', deal_id: dealId },
          ],
        },
      });
      expect(people.status, people.text).toBe(201);
      const found = async (q: string) => {
        const res = await s.api(`/search?q=${encodeURIComponent(q)}`, { key: org.apiKey });
        expect(res.status).toBe(200);
        return {
          deals: res.body.data.deals.map((d: { title: string }) => d.title),
          contacts: res.body.data.contacts.map((c: { name: string }) => c.name),
          counts: [res.body.meta.deals.total, res.body.meta.contacts.total],
        };
      };
      // More trigrams than one read looks up (nine): the rest are tested on the rows found.
      expect(await found('SMITH999993@exam')).toEqual({
        deals: [],
        contacts: ['Anna Smith'],
        counts: [0, 1],
      });
      expect(await found('renewal')).toEqual({ deals: ['Renewal 2027'], contacts: [], counts: [1, 0] });
      expect(await found('LLERSTR')).toEqual({ deals: [], contacts: ['Lena Müllerstraße'], counts: [0, 1] });
      expect(await found('AB½')).toEqual({ deals: ['Seats ab½ plan'], contacts: [], counts: [1, 0] });
      expect(await found('ΒΟΣΑ')).toEqual({ deals: ['ΑΒΟΣΑ plan'], contacts: [], counts: [1, 0] });
      // GET /contacts?q= counts and reads its matches the same way (by their ids here: few of them).
      for (const [q, names] of [
        ['SMITH999993@exam', ['Anna Smith']],
        ['LLERSTR', ['Lena Müllerstraße']],
        ['smith', ['Decoy', 'Anna Smith']],
      ] as const) {
        const res = await s.api(`/contacts?q=${encodeURIComponent(q)}`, { key: org.apiKey });
        expect(res.status, res.text).toBe(200);
        expect(
          res.body.data.map((c: { name: string }) => c.name),
          q,
        ).toEqual(names);
        expect(res.body.meta.total, q).toBe(names.length);
      }
    });

    it("holds every GIN index's pending list to 256 kB, which each search reads whole", async () => {
      const gin = await s.sql<{ name: string; options: string[] | null }>(
        `select c.relname as name, c.reloptions as options from pg_class c join pg_am a on a.oid = c.relam
          where a.amname = 'gin' and c.relnamespace = 'public'::regnamespace order by 1`,
      );
      expect(gin.map((i) => i.name).sort()).toEqual([...GIN_INDEXES, 'deals_search_text'].sort());
      for (const index of gin) expect(index.options, index.name).toEqual(['gin_pending_list_limit=256']);
    });
  },
);
