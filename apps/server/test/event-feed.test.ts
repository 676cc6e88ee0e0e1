import { emitEvent, issueApiKey, runAsCall } from '@crm/api';
import { ORG_FILTER, transaction } from '@crm/db';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVERS, MISSING_ID, startTestServer, type TestOrg, type TestServer } from './harness.ts';
import { mcpClient } from './mcp-client.ts';

/**
 * How long the concurrent writers run: 5 s in the suite, which keeps `npm test` within its 5 minutes (a
 * late commit every 150 ms still lands dozens of times); FEED_TEST_SECONDS=20 for the issue's 20 s (passed
 * 20 s runs on both databases before).
 */
const WRITE_SECONDS = Number(process.env.FEED_TEST_SECONDS ?? 5);

interface FeedEvent {
  id: string;
  type: string;
  cursor: string;
  timestamp: string;
  data: Record<string, unknown>;
  changes?: Record<string, { from: unknown; to: unknown }>;
  actor: { type: string; api_key_id?: string; via: string } | null;
  request_id: string | null;
}

/** Every event after `after`, page by page, until the feed has no more right now. */
async function readAll(s: TestServer, org: TestOrg, after?: string, limit = 50) {
  const events: FeedEvent[] = [];
  let cursor = after;
  for (;;) {
    const res = await s.api(`/events?limit=${limit}${cursor ? `&after=${cursor}` : ''}`, { key: org.apiKey });
    expect(res.status).toBe(200);
    events.push(...res.body.data);
    cursor = res.body.meta.next_cursor ?? cursor;
    if (!res.body.meta.has_more) return { events, cursor };
  }
}

for (const { driver, label, skip } of DRIVERS) {
  describe.skipIf(skip)(`the event feed on ${label}`, () => {
    let s: TestServer;
    beforeAll(async () => {
      s = await startTestServer(driver);
    });
    afterAll(async () => {
      await s?.stop();
    });

    it('lists the organization’s events in order, with who made each change and the request id', async () => {
      const org = await s.newOrg('Feed org');
      const created = await s.api('/deals', {
        method: 'POST',
        key: org.apiKey,
        json: { title: 'Fed', value: 100 },
        headers: { 'x-request-id': 'req-feed-1' },
      });
      const id = created.body.data.id as string;
      await s.api(`/deals/${id}`, { method: 'PATCH', key: org.apiKey, json: { value: 250 } });
      const client = await mcpClient(s.url, org.apiKey);
      const viaMcp = (await client.callTool({
        name: 'deals-create',
        arguments: { title: 'Via MCP' },
      })) as CallToolResult;
      await client.close();
      const viaTrpc = await fetch(`${s.url}/trpc/deals.create`, {
        method: 'POST',
        headers: { authorization: `Bearer ${org.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ title: 'Via tRPC' }),
      });
      expect(viaTrpc.status).toBe(200);

      const { events } = await readAll(s, org);
      expect(events.map((e) => e.type)).toEqual([
        'deal.created',
        'deal.updated',
        'deal.created',
        'deal.created',
      ]);
      const [first, updated, mcp, trpc] = events as [FeedEvent, FeedEvent, FeedEvent, FeedEvent];
      expect(first).toMatchObject({
        id: expect.any(String),
        data: { id, title: 'Fed', value: 100 },
        actor: { type: 'api_key', api_key_id: org.keyId, via: 'rest' },
        request_id: 'req-feed-1',
      });
      expect(updated.changes).toEqual({ value: { from: 100, to: 250 } });
      expect(mcp.actor?.via).toBe('mcp');
      expect(mcp.data.id).toBe((viaMcp.structuredContent as { data: { id: string } }).data.id);
      expect(trpc.actor?.via).toBe('trpc');
      // Cursors grow; each event reads back on its own, the same.
      expect(events.map((e) => BigInt(e.cursor))).toEqual(
        [...events.map((e) => BigInt(e.cursor))].sort((a, b) => (a < b ? -1 : 1)),
      );
      expect((await s.api(`/events/${first.id}`, { key: org.apiKey })).body.data).toEqual(first);
      // The event is its webhook delivery's message: same id, type, time and data as the outbox payload.
      const [stored] = await s.sql<{ payload: string }>('select payload from outbox_events where id = ?', [
        first.id,
      ]);
      const payload = JSON.parse(stored?.payload ?? '{}');
      expect({ type: first.type, timestamp: first.timestamp, data: first.data }).toEqual(payload);
    });

    it('places new events in the feed in the background, so a read after a bulk import does not have to', async () => {
      const org = await s.newOrg('Placed org');
      const items = Array.from({ length: 30 }, (_, i) => ({ title: `Bulk ${i}` }));
      const res = await s.api('/deals/batch', { method: 'POST', key: org.apiKey, json: { items } });
      expect(res.status).toBe(201);
      // No read of the feed meanwhile: the webhook worker's pass after dispatching places them.
      const unplaced = async () =>
        Number(
          (
            await s.sql<{ n: string }>(
              'select count(*) as n from outbox_events where org_id = ? and position is null',
              [org.orgId],
            )
          )[0]?.n,
        );
      const until = Date.now() + 10_000;
      while ((await unplaced()) > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      expect(await unplaced()).toBe(0);
      const { events } = await readAll(s, org);
      expect(events.filter((e) => e.type === 'deal.created')).toHaveLength(30);
    });

    it('filters by type, pages with after, and says when there is more', async () => {
      const org = await s.newOrg('Feed paging org');
      for (let i = 0; i < 5; i++) {
        const res = await s.api('/deals', { method: 'POST', key: org.apiKey, json: { title: `D${i}` } });
        if (i % 2 === 0)
          await s.api(`/deals/${res.body.data.id}`, {
            method: 'PATCH',
            key: org.apiKey,
            json: { notes: 'n' },
          });
      }
      const page = await s.api('/events?limit=2', { key: org.apiKey });
      expect(page.body.data).toHaveLength(2);
      expect(page.body.meta.has_more).toBe(true);
      const next = await s.api(`/events?limit=100&after=${page.body.meta.next_cursor}`, { key: org.apiKey });
      expect(next.body.data).toHaveLength(6);
      expect(next.body.meta.has_more).toBe(false);
      const updates = await s.api('/events?types=deal.updated', { key: org.apiKey });
      expect(updates.body.data.map((e: FeedEvent) => e.type)).toEqual([
        'deal.updated',
        'deal.updated',
        'deal.updated',
      ]);
      // Polling at the end returns nothing and keeps the cursor.
      const end = await s.api(`/events?after=${next.body.meta.next_cursor}`, { key: org.apiKey });
      expect(end.body).toEqual({
        data: [],
        meta: { next_cursor: next.body.meta.next_cursor, has_more: false },
      });
    });

    it('filter: only events whose record meets it, paged exactly; the cursor moves past events filtered out', async () => {
      const org = await s.newOrg('Feed filter org');
      const api = (path: string, init: Parameters<TestServer['api']>[1] = {}) =>
        s.api(path, { key: org.apiKey, ...init });
      const values = [5, 60, 70, 1, 80, 2, 90];
      for (const [i, value] of values.entries()) {
        const res = await api('/deals', { method: 'POST', json: { title: `F${i}`, value } });
        await api(`/deals/${res.body.data.id}`, { method: 'PATCH', json: { value: value + 1 } });
      }
      // Trailing events the filter leaves out: the last page's cursor passes them.
      await api('/contacts', { method: 'POST', json: { name: 'Not a deal' } });
      await api('/deals', { method: 'POST', json: { title: 'Tail', value: 3 } });
      const all = (await api('/events?limit=500')).body.data as FeedEvent[];
      const filter = { field: 'value', op: 'gte', value: 50 };
      const types = 'deal.created,deal.updated';
      const want = all
        .filter((e) => types.includes(e.type) && Number((e.data as { value?: number }).value) >= 50)
        .map((e) => e.id);
      expect(want).toHaveLength(8);
      const got: string[] = [];
      let cursor: string | undefined;
      for (let pages = 0; pages < 10; pages++) {
        const res = await api(
          `/events?types=${types}&limit=3&filter=${encodeURIComponent(JSON.stringify(filter))}${cursor ? `&after=${cursor}` : ''}`,
        );
        expect(res.status, res.text).toBe(200);
        got.push(...res.body.data.map((e: FeedEvent) => e.id));
        cursor = res.body.meta.next_cursor;
        if (!res.body.meta.has_more) break;
      }
      expect(got).toEqual(want);
      // The last page read to the feed's end: polling from its cursor reads nothing again.
      expect(cursor).toBe(all.at(-1)?.cursor);
      const again = await api(
        `/events?types=${types}&filter=${encodeURIComponent(JSON.stringify(filter))}&after=${cursor}`,
      );
      expect(again.body).toEqual({ data: [], meta: { next_cursor: cursor, has_more: false } });

      // Strict as the lists: types are required with a filter, and the filter must fit each type's record.
      const refused = async (query: string) => {
        const res = await api(`/events?${query}`);
        expect(res.status, res.text).toBe(400);
        return res.body.error as string;
      };
      expect(await refused(`filter=${encodeURIComponent(JSON.stringify(filter))}`)).toMatch(
        /^types: required with filter/,
      );
      expect(
        await refused(`types=contact.created&filter=${encodeURIComponent(JSON.stringify(filter))}`),
      ).toMatch(/^filter\/field: unknown field "value"/);
      expect(
        await refused(`types=deal.won&filter=${encodeURIComponent('{"field": "value", "op": "gte"}')}`),
      ).toBe('filter/value: Required');
      expect(await refused('types=deal.won&filter=%7B')).toMatch(/^filter: not valid JSON/);
    });

    it('bad input names the parameter; another organization’s event is a 404; a key without events:read is refused', async () => {
      const bad = await s.api('/events?after=abc');
      expect(bad.status).toBe(400);
      expect(bad.body.error).toMatch(/^after: /);
      const type = await s.api('/events?types=deal.created,deal.exploded');
      expect(type.status).toBe(400);
      expect(type.body.error).toMatch(/types: unknown event type deal\.exploded/);
      const limit = await s.api('/events?limit=501');
      expect(limit.status).toBe(400);
      const huge = await s.api('/events?after=9999999999999999999');
      expect(huge.status).toBe(400);
      expect(huge.body.error).toMatch(/^after: /);
      const created = await s.api('/deals', { method: 'POST', json: { title: 'A only' } });
      const { events } = await readAll(s, s.orgA);
      const mine = events.find((e) => e.data.id === created.body.data.id);
      expect(mine).toBeDefined();
      expect((await s.api(`/events/${mine?.id}`, { key: s.orgB.apiKey })).status).toBe(404);
      expect((await s.api(`/events/${MISSING_ID}`)).status).toBe(404);
      expect((await readAll(s, s.orgB)).events.some((e) => e.data.id === created.body.data.id)).toBe(false);
      const narrow = await issueApiKey(s.running.db.orm.em.fork(), s.orgA.orgId, { scopes: ['deals:read'] });
      const refused = await s.api('/events', { key: narrow.api_key });
      expect(refused.body).toMatchObject({ code: 'insufficient_scope' });
    });
  });
}

/**
 * Eight writers for WRITE_SECONDS (one of them committing each event late on purpose) while three readers
 * page with `after`: every reader gets every committed event once, in feed order, and commit order holds.
 */
async function neverSkips(s: TestServer, driver: string): Promise<void> {
  const org = await s.newOrg('Feed concurrency org');
  const deadline = Date.now() + WRITE_SECONDS * 1000;
  /** Per writer, the event ids in the order their requests finished (each began after the last). */
  const writerOrders: string[][] = [];
  const writer = async (w: number) => {
    const order: string[] = [];
    writerOrders.push(order);
    for (let i = 0; Date.now() < deadline; i++) {
      if (w === 0) {
        // A transaction that takes its id and timestamp, then commits late: readers pass it meanwhile.
        const em = s.running.db.orm.em.fork();
        const actor = { type: 'api_key' as const, api_key_id: org.keyId, via: 'rest' as const };
        const id = await runAsCall({ actor, requestId: `late-${i}` }, () =>
          transaction(em, async (tx) => {
            tx.setFilterParams(ORG_FILTER, { orgId: org.orgId });
            await emitEvent(tx, { type: 'contact.updated', data: { n: i } });
            await new Promise((r) => setTimeout(r, 150));
            const [row] = await tx.execute<{ id: string }[]>(
              "select id from outbox_events where org_id = ? and type = 'contact.updated' order by created_at desc, id desc limit 1",
              [org.orgId],
            );
            return row?.id as string;
          }),
        );
        order.push(id);
        continue;
      }
      const res = await s.api('/deals', {
        method: 'POST',
        key: org.apiKey,
        json: { title: `w${w}-${i}` },
      });
      expect(res.status).toBe(201);
      const [row] = await s.sql<{ id: string }>(
        "select id from outbox_events where type = 'deal.created' and payload like ?",
        [`%${res.body.data.id}%`],
      );
      order.push(row?.id as string);
    }
  };
  /** A reader pages continuously while the writers run, then catches up once they stopped. */
  const reader = async () => {
    const seen: FeedEvent[] = [];
    let cursor: string | undefined;
    while (Date.now() < deadline) {
      const page = await readAll(s, org, cursor, 7);
      seen.push(...page.events);
      cursor = page.cursor;
      await new Promise((r) => setTimeout(r, 20));
    }
    return { seen, cursor };
  };
  const readers = [reader(), reader(), reader()];
  await Promise.all(Array.from({ length: 8 }, (_, w) => writer(w)));
  const results = await Promise.all(readers);

  const committed = (
    await s.sql<{ id: string }>('select id from outbox_events where org_id = ? order by position', [
      org.orgId,
    ])
  ).map((r) => r.id);
  const written = writerOrders.flat();
  expect(new Set(committed)).toEqual(new Set(written));
  expect(written.length).toBeGreaterThan(WRITE_SECONDS * 2);
  for (const { seen, cursor } of results) {
    const rest = await readAll(s, org, cursor);
    const ids = [...seen, ...rest.events].map((e) => e.id);
    // Every committed event, once, in the feed's order.
    expect(ids).toEqual(committed);
  }
  // The late commits did happen: some event was placed after events stamped later than it (a feed read
  // by id or timestamp would have skipped it for a reader that had passed those).
  const stamped = await s.sql<{ id: string }>(
    'select id from outbox_events where org_id = ? order by created_at, id',
    [org.orgId],
  );
  if (driver === 'postgresql') expect(stamped.map((r) => r.id)).not.toEqual(committed);
  // Commit order: what one writer did after another finished comes after it in the feed.
  const place = new Map(committed.map((id, i) => [id, i]));
  for (const order of writerOrders)
    for (let i = 1; i < order.length; i++)
      expect(place.get(order[i] as string)).toBeGreaterThan(place.get(order[i - 1] as string) as number);
}

// Both databases at once (each test starts its own server): the two runs overlap instead of adding up.
describe.concurrent('the event feed under concurrent writers', () => {
  for (const { driver, label, skip } of DRIVERS)
    it.skipIf(skip)(
      `never skips on ${label}: ${WRITE_SECONDS} s of eight writers in parallel, late commits included, while readers page`,
      async () => {
        const s = await startTestServer(driver);
        try {
          await neverSkips(s, driver);
        } finally {
          await s.stop();
        }
      },
      (WRITE_SECONDS + 90) * 1000,
    );
});
