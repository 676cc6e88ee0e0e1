import { ORG_FILTER, transaction } from '@crm/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVERS, startTestServer, type TestOrg, type TestServer } from './harness.ts';

/** How long the concurrent writers run: 3 s in the suite, for `npm test`'s 5 minutes (SYNC_TEST_SECONDS to run longer). */
const WRITE_SECONDS = Number(process.env.SYNC_TEST_SECONDS ?? 3);
const EPOCH = '2000-01-01T00:00:00Z';

type Row = Record<string, unknown> & { id: string };
interface SyncPage {
  data: Row[];
  deleted?: Array<{ id: string; deleted_at: string }>;
  meta: { total: number; next_cursor: string; has_more: boolean; total_exact?: boolean };
}

/** Pages a sync of `list` from `cursor` until it has no more now; the pages in order and the cursor to go on from. */
async function syncAll(
  s: TestServer,
  org: TestOrg,
  list: string,
  params: { since: string; cursor?: string; limit?: number; extra?: string },
) {
  const pages: SyncPage[] = [];
  let cursor = params.cursor;
  for (;;) {
    const q = `updated_since=${encodeURIComponent(params.since)}&include_deleted=true&limit=${params.limit ?? 50}${cursor ? `&after=${cursor}` : ''}${params.extra ?? ''}`;
    const res = await s.api(`/${list}?${q}`, { key: org.apiKey });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const page = res.body as SyncPage;
    expect(page.meta.next_cursor).toMatch(/^\d+$/);
    pages.push(page);
    cursor = page.meta.next_cursor;
    if (!page.meta.has_more) return { pages, cursor };
  }
}

/** A mirror kept from sync pages: each record as last answered, tombstones applied. */
function apply(mirror: Map<string, Row>, pages: SyncPage[]) {
  for (const page of pages) {
    for (const row of page.data) mirror.set(row.id, row);
    for (const t of page.deleted ?? []) mirror.delete(t.id);
  }
}

const ids = (pages: SyncPage[]) => pages.flatMap((p) => p.data.map((r) => r.id));
const gone = (pages: SyncPage[]) => pages.flatMap((p) => (p.deleted ?? []).map((t) => t.id));

for (const { driver, label, skip } of DRIVERS) {
  describe.skipIf(skip)(`sync (updated_since, include_deleted) on ${label}`, { concurrent: false }, () => {
    let s: TestServer;
    let org: TestOrg;
    beforeAll(async () => {
      s = await startTestServer(driver);
      org = await s.newOrg('Sync org');
    });
    afterAll(async () => {
      await s?.stop();
    });

    it('answers every change of each list in sync order, its tombstones, and where to go on from', async () => {
      const post = async (path: string, json: unknown) => {
        const res = await s.api(path, { method: 'POST', key: org.apiKey, json });
        expect(res.status, JSON.stringify(res.body)).toBe(201);
        return res.body.data as Row;
      };
      const company = await post('/companies', { name: 'Sync Co', domain: 'sync.example' });
      const [a, b] = [await post('/deals', { title: 'A', value: 10 }), await post('/deals', { title: 'B' })];
      const contact = await post('/contacts', { name: 'Cara', deal_id: b.id });
      const activity = await post('/activities', {
        type: 'note',
        subject: 'Met',
        links: [
          { type: 'deal', id: b.id },
          { type: 'company', id: company.id },
        ],
      });

      // A first read: everything there, in the order written; the plain list is answered as before.
      const first = {
        deals: await syncAll(s, org, 'deals', { since: EPOCH, limit: 1 }),
        contacts: await syncAll(s, org, 'contacts', { since: EPOCH }),
        companies: await syncAll(s, org, 'companies', { since: EPOCH }),
        activities: await syncAll(s, org, 'activities', { since: EPOCH }),
      };
      expect(ids(first.deals.pages)).toEqual([a.id, b.id]);
      expect(first.deals.pages[0]?.meta).toMatchObject({ total: 2, limit: 1, offset: 0, has_more: true });
      expect(ids(first.contacts.pages)).toEqual([contact.id]);
      expect(ids(first.companies.pages)).toEqual([company.id]);
      expect(first.activities.pages[0]?.data).toEqual([
        expect.objectContaining({
          id: activity.id,
          links: expect.arrayContaining([{ type: 'deal', id: b.id }]),
        }),
      ]);
      const plain = await s.api('/deals', { key: org.apiKey });
      expect(plain.body.meta).toEqual({ total: 2, limit: 50, offset: 0, next_cursor: null });
      expect(plain.body.deleted).toBeUndefined();
      // A record as a sync answers it is the record as the list answers it.
      expect(first.deals.pages[0]?.data[0]).toEqual(plain.body.data.find((d: Row) => d.id === a.id));

      // Nothing changed: an empty page, the same cursor.
      const quiet = await syncAll(s, org, 'deals', { since: EPOCH, cursor: first.deals.cursor });
      expect(quiet.pages).toEqual([
        {
          data: [],
          deleted: [],
          meta: expect.objectContaining({ total: 0, next_cursor: first.deals.cursor }),
        },
      ]);

      // A change, a deletion (its contact goes with it, the activity loses its link), a stage renamed.
      await s.api(`/deals/${a.id}`, { method: 'PATCH', key: org.apiKey, json: { value: 20 } });
      expect((await s.api(`/deals/${b.id}`, { method: 'DELETE', key: org.apiKey })).status).toBe(200);
      const next = {
        deals: await syncAll(s, org, 'deals', { since: EPOCH, cursor: first.deals.cursor }),
        contacts: await syncAll(s, org, 'contacts', { since: EPOCH, cursor: first.contacts.cursor }),
        activities: await syncAll(s, org, 'activities', { since: EPOCH, cursor: first.activities.cursor }),
        companies: await syncAll(s, org, 'companies', { since: EPOCH, cursor: first.companies.cursor }),
      };
      expect(ids(next.deals.pages)).toEqual([a.id]);
      expect(next.deals.pages[0]?.data[0]).toMatchObject({ value: 20 });
      expect(gone(next.deals.pages)).toEqual([b.id]);
      expect(next.deals.pages[0]?.deleted?.[0]?.deleted_at).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z$/);
      expect(gone(next.contacts.pages)).toEqual([contact.id]);
      expect(next.activities.pages[0]?.data).toEqual([
        expect.objectContaining({ id: activity.id, links: [{ type: 'company', id: company.id }] }),
      ]);
      expect(ids(next.companies.pages)).toEqual([]);

      const [stage] = await s.sql<{ id: string }>('select stage_id as id from deals where id = ?', [a.id]);
      await s.sql('update pipeline_stages set name = ? where id = ?', ['Renamed', stage?.id]);
      const renamed = await syncAll(s, org, 'deals', { since: EPOCH, cursor: next.deals.cursor });
      expect(renamed.pages[0]?.data).toEqual([expect.objectContaining({ id: a.id, stage_name: 'Renamed' })]);

      // updated_since alone: what changed at or after it (the deal patched after `mark`, not the company).
      const mark = new Date().toISOString();
      await new Promise((r) => setTimeout(r, 5));
      await s.api(`/companies/${company.id}`, {
        method: 'PATCH',
        key: org.apiKey,
        json: { industry: 'Sync' },
      });
      const since = await syncAll(s, org, 'companies', { since: mark });
      expect(ids(since.pages)).toEqual([company.id]);
      const none = await syncAll(s, org, 'deals', { since: mark });
      expect(ids(none.pages)).toEqual([]);
    });

    it('combines updated_since with filter and the list’s parameters (GET and POST …/query alike)', async () => {
      const other = await s.newOrg('Sync filter org');
      const items = Array.from({ length: 30 }, (_, i) => ({ title: `F${i}`, value: i * 100 }));
      const res = await s.api('/deals/batch', { method: 'POST', key: other.apiKey, json: { items } });
      expect(res.status).toBe(201);
      const mark = new Date().toISOString();
      await new Promise((r) => setTimeout(r, 5));
      const created = res.body.data as Row[];
      for (const d of created.slice(0, 12))
        await s.api(`/deals/${d.id}`, { method: 'PATCH', key: other.apiKey, json: { notes: 'touched' } });
      const filter = { field: 'value', op: 'gte', value: 500 };
      const extra = `&filter=${encodeURIComponent(JSON.stringify(filter))}`;
      const got = await syncAll(s, other, 'deals', { since: mark, limit: 3, extra });
      // The reference: the rows changed since the mark that meet the filter, from the table.
      const expected = await s.sql<{ id: string }>(
        'select id from deals where org_id = ? and updated_at >= ? and value >= 500',
        [other.orgId, mark],
      );
      expect(new Set(ids(got.pages))).toEqual(new Set(expected.map((r) => r.id)));
      expect(ids(got.pages)).toHaveLength(7);
      expect(got.pages[0]?.meta).toMatchObject({ total: 7, has_more: true });
      const body = await s.api('/deals/query', {
        method: 'POST',
        key: other.apiKey,
        json: { updated_since: mark, include_deleted: true, limit: 3, filter },
      });
      expect(body.status).toBe(200);
      expect(body.body).toEqual(got.pages[0]);
    });

    it('keeps tombstones 30 days: older ones are purged, and a cursor from before then is refused', async () => {
      const old = await s.newOrg('Sync retention org');
      const made = await s.api('/deals/batch', {
        method: 'POST',
        key: old.apiKey,
        json: { items: [{ title: 'Kept' }, { title: 'Gone long ago' }, { title: 'Gone today' }] },
      });
      const [kept, longAgo, today] = made.body.data as [Row, Row, Row];
      const first = await syncAll(s, old, 'deals', { since: EPOCH });
      for (const d of [longAgo, today]) await s.api(`/deals/${d.id}`, { method: 'DELETE', key: old.apiKey });
      await syncAll(s, old, 'deals', { since: EPOCH, cursor: first.cursor });
      // Time passes: the first deletion and every pass so far 40 days ago.
      await s.sql("update sync_changes set deleted_at = deleted_at - interval '40 days' where id = ?", [
        longAgo.id,
      ]);
      await s.sql("update sync_marks set at = at - interval '40 days'");
      await s.api(`/deals/${kept.id}`, { method: 'PATCH', key: old.apiKey, json: { value: 1 } });
      // A read places the change, and its pass purges what is older than 30 days.
      const fresh = await syncAll(s, old, 'deals', { since: EPOCH });
      expect(gone(fresh.pages)).toEqual([today.id]);
      expect(ids(fresh.pages)).toEqual([kept.id]);
      // The cursor of 40 days ago could miss deletions: refused with include_deleted, answered without.
      const stale = await s.api(`/deals?updated_since=${EPOCH}&include_deleted=true&after=${first.cursor}`, {
        key: old.apiKey,
      });
      expect(stale.status).toBe(400);
      expect(stale.body.error).toMatch(/^after: this cursor is older than the 29 days/);
      const plain = await s.api(`/deals?updated_since=${EPOCH}&after=${first.cursor}`, { key: old.apiKey });
      expect(plain.status).toBe(200);
      expect(ids([plain.body])).toEqual([kept.id]);
    });

    it('refuses what a sync cannot answer, naming the parameter', async () => {
      const cases: Array<[string, RegExp]> = [
        ['updated_since=yesterday', /^updated_since: /],
        ['updated_since=2026-01-01T00:00:00Z&include_deleted=yes', /^include_deleted: /],
        ['include_deleted=true', /^include_deleted: only with updated_since/],
        ['updated_since=2026-01-01T00:00:00Z&after=0189abcd', /^after: with updated_since/],
        ['updated_since=2026-01-01T00:00:00Z&sort=-value', /^sort: /],
        ['updated_since=2026-01-01T00:00:00Z&offset=10', /^offset: /],
        ['after=12', /^after: Invalid UUID/],
      ];
      for (const [query, message] of cases)
        for (const list of ['deals', 'contacts', 'companies', 'activities']) {
          if (list === 'activities' && /sort|offset/.test(query)) continue;
          const res = await s.api(`/${list}?${query}`, { key: org.apiKey });
          expect(res.status, `${list}?${query}`).toBe(400);
          expect(res.body.error, `${list}?${query}`).toMatch(message);
        }
    });
  });
}

/**
 * Writers create, change and delete deals for WRITE_SECONDS (one of them holding each transaction open
 * 150 ms after its write, so later writes commit first) while a reader keeps a mirror from sync pages: at
 * the end, the mirror is the table, every change and every deletion in it.
 */
async function mirrorStaysExact(s: TestServer, driver: string): Promise<void> {
  const org = await s.newOrg('Sync concurrency org');
  const deadline = Date.now() + WRITE_SECONDS * 1000;
  let writes = 0;
  let deletes = 0;
  const writer = async (w: number) => {
    const mine: string[] = [];
    for (let i = 0; Date.now() < deadline; i++) {
      if (w === 0 && mine.length > 0) {
        // A late commit: changed first, committed after others that began later.
        const id = mine[i % mine.length] as string;
        const em = s.running.db.orm.em.fork();
        await transaction(em, async (tx) => {
          tx.setFilterParams(ORG_FILTER, { orgId: org.orgId });
          await tx.execute(
            'update deals set value = coalesce(value, 0) + 1, updated_at = now() where id = ?',
            [id],
          );
          await new Promise((r) => setTimeout(r, 150));
        });
        writes++;
        continue;
      }
      const roll = i % 5;
      if (roll < 2 || mine.length < 3) {
        const res = await s.api('/deals', { method: 'POST', key: org.apiKey, json: { title: `w${w}-${i}` } });
        expect(res.status).toBe(201);
        mine.push(res.body.data.id);
      } else if (roll < 4) {
        const id = mine[(i * 7) % mine.length] as string;
        const res = await s.api(`/deals/${id}`, { method: 'PATCH', key: org.apiKey, json: { value: i } });
        expect(res.status).toBe(200);
      } else {
        const id = mine.splice((i * 3) % mine.length, 1)[0] as string;
        const res = await s.api(`/deals/${id}`, { method: 'DELETE', key: org.apiKey });
        expect(res.status).toBe(200);
        deletes++;
      }
      writes++;
    }
  };
  const mirror = new Map<string, Row>();
  const reader = async () => {
    let cursor: string | undefined;
    while (Date.now() < deadline) {
      const got = await syncAll(s, org, 'deals', { since: EPOCH, cursor, limit: 7 });
      apply(mirror, got.pages);
      cursor = got.cursor;
      await new Promise((r) => setTimeout(r, 20));
    }
    return cursor;
  };
  const reading = reader();
  await Promise.all(Array.from({ length: 5 }, (_, w) => writer(w)));
  // Writer 0 reuses the first writers' deals: give it some before the deadline passes.
  const cursor = await reading;
  apply(mirror, (await syncAll(s, org, 'deals', { since: EPOCH, cursor })).pages);

  const table = await s.sql<{ id: string; value: string | null; title: string }>(
    'select id, value, title from deals where org_id = ? order by id',
    [org.orgId],
  );
  expect(writes).toBeGreaterThan(WRITE_SECONDS * 4);
  expect(deletes).toBeGreaterThan(0);
  expect([...mirror.keys()].sort()).toEqual(table.map((r) => r.id));
  // The late commits did happen: a change placed after changes stamped later than it (a sync read by
  // timestamp would have skipped it for a reader that had passed those).
  const placed = await s.sql<{ id: string }>(
    'select id from sync_changes where org_id = ? and position is not null order by position',
    [org.orgId],
  );
  const stamped = await s.sql<{ id: string }>(
    'select id from sync_changes where org_id = ? and position is not null order by changed_at, position',
    [org.orgId],
  );
  if (driver === 'postgresql') expect(stamped.map((r) => r.id)).not.toEqual(placed.map((r) => r.id));
  for (const row of table)
    expect(mirror.get(row.id)).toMatchObject({
      title: row.title,
      value: row.value == null ? null : Number(row.value),
    });
}

describe.concurrent('sync under concurrent writers', () => {
  for (const { driver, label, skip } of DRIVERS)
    it.skipIf(skip)(
      `keeps a mirror exact on ${label}: ${WRITE_SECONDS} s of writers creating, changing and deleting, late commits included`,
      async () => {
        const s = await startTestServer(driver);
        try {
          await mirrorStaysExact(s, driver);
        } finally {
          await s.stop();
        }
      },
      (WRITE_SECONDS + 90) * 1000,
    );
});
