import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVERS, MISSING_ID, startTestServer, type TestOrg, type TestServer } from './harness.ts';
import { mcpClient } from './mcp-client.ts';

type Row = Record<string, unknown>;
interface FeedEvent {
  id: string;
  type: string;
  timestamp: string;
  data: Row;
  changes?: Record<string, { from: unknown; to: unknown }>;
  actor: Row | null;
}

/** What the record answers that is not its history's: its clocks and the AI's scores. */
const withoutClocks = ({ updated_at: _u, last_activity_at: _l, ...rest }: Row) => rest;
const earlier = (iso: string) => new Date(Date.parse(iso) - 1).toISOString();

for (const { driver, label, skip } of DRIVERS) {
  describe.skipIf(skip)(`field history and as_of on ${label}`, () => {
    let s: TestServer;
    let org: TestOrg;
    beforeAll(async () => {
      s = await startTestServer(driver);
      org = await s.newOrg(`history ${Math.random()}`);
    });
    afterAll(async () => {
      await s?.stop();
    });
    const api = (path: string, init: Parameters<TestServer['api']>[1] = {}) =>
      s.api(path, { key: org.apiKey, ...init });
    const ok = async (path: string, init: Parameters<TestServer['api']>[1] = {}) => {
      const res = await api(path, init);
      expect(res.status, `${path}: ${res.text}`).toBeLessThan(300);
      return res.body;
    };
    const eventsOf = async (id: string, types: string): Promise<FeedEvent[]> =>
      ((await ok(`/events?types=${types}&limit=500`)).data as FeedEvent[]).filter((e) => e.data.id === id);

    it('keeps every value of a deal’s fields changed through REST, tRPC, MCP and a batch upsert, with as_of and derived facts', async () => {
      for (const field of [
        { key: 'region', type: 'text' },
        { key: 'external_id', type: 'text', unique: true },
      ])
        await ok('/custom-fields/deals', { method: 'POST', json: field });
      type Stage = { id: string; name: string };
      const [first, second, third] = (await ok('/pipeline/stages')).data as [Stage, Stage, Stage];
      const closes = ['2027-01-15T12:00:00.000Z', '2027-02-01T12:00:00.000Z', '2027-03-01T12:00:00.000Z'];
      const snapshots: Row[] = [];
      const snap = async (id: string) => snapshots.push((await ok(`/deals/${id}`)).data.deal);

      const deal = (
        await ok('/deals', {
          method: 'POST',
          json: {
            title: 'History rollout',
            value: 100,
            expected_close_date: '2027-01-01T12:00:00.000Z',
            custom: { region: 'emea', external_id: 'H-1' },
          },
        })
      ).data;
      await snap(deal.id);
      // REST: a stage move and a value.
      await ok(`/deals/${deal.id}`, { method: 'PATCH', json: { stage_id: second.id, value: 200 } });
      await snap(deal.id);
      // tRPC: the close date and a custom value.
      await s
        .trpc(org)
        .deals.update.mutate({ id: deal.id, expected_close_date: closes[0], custom: { region: 'apac' } });
      await snap(deal.id);
      // MCP: another stage and close date.
      const mcp = await mcpClient(s.url, org.apiKey);
      try {
        const res = (await mcp.callTool({
          name: 'deals-update',
          arguments: { id: deal.id, stage_id: third.id, expected_close_date: closes[1] },
        })) as CallToolResult;
        expect(res.isError, JSON.stringify(res.content)).toBeFalsy();
        await snap(deal.id);
        const read = (await mcp.callTool({
          name: 'deals-history',
          arguments: { id: deal.id, field: 'stage_id' },
        })) as CallToolResult;
        expect(read.isError, JSON.stringify(read.content)).toBeFalsy();
        expect((read.structuredContent as { data: Row[] }).data).toHaveLength(3);
      } finally {
        await mcp.close();
      }
      // A batch upsert on the unique field: back to the first stage, the close date pushed once more.
      await ok('/deals/batch?upsert_on=external_id', {
        method: 'POST',
        json: {
          items: [
            {
              title: 'History rollout',
              stage_id: first.id,
              expected_close_date: closes[2],
              custom: { external_id: 'H-1' },
            },
          ],
        },
      });
      await snap(deal.id);

      const events = await eventsOf(deal.id, 'deal.created,deal.updated');
      expect(events.map((e) => e.type)).toEqual(['deal.created', ...Array(4).fill('deal.updated')]);
      expect(events.slice(1).map((e) => e.actor?.via)).toEqual(['rest', 'trpc', 'mcp', 'rest']);

      // The history the events imply: the creation's values, then each change, until the next one.
      const fields = ['stage_id', 'value', 'expected_close_date', 'custom.region'];
      const rows: Row[] = [];
      for (const e of events)
        for (const field of fields) {
          const value =
            e.type === 'deal.created'
              ? field.startsWith('custom.')
                ? (e.data.custom as Row)[field.slice(7)]
                : e.data[field]
              : e.changes?.[field]?.to;
          if (value === undefined) continue;
          rows.push({ field, value, from: e.timestamp, until: null, actor: e.actor, event_id: e.id });
        }
      for (const [i, row] of rows.entries())
        row.until = rows.slice(i + 1).find((r) => r.field === row.field)?.from ?? null;
      const byTime = (a: Row, b: Row) => String(a.from).localeCompare(String(b.from));
      // Creation time: the deal's created_at, which is its event's (both taken once).
      expect(rows[0]?.from).toBe(deal.created_at);

      const history = await ok(`/deals/${deal.id}/history?field=${fields.join(',')}`);
      // Oldest first; the rows of one change (one instant) in no promised order.
      const ordered = (list: Row[]) =>
        [...list].sort((a, b) => byTime(a, b) || String(a.field).localeCompare(String(b.field)));
      expect(history.data.map((r: Row) => r.from)).toEqual([...rows].sort(byTime).map((r) => r.from));
      expect(ordered(history.data)).toEqual(ordered(rows));
      expect(history.meta.next_cursor).toBeNull();

      // Page by page, the same rows.
      const all = (await ok(`/deals/${deal.id}/history`)).data as Row[];
      const paged: Row[] = [];
      let after: string | null = null;
      do {
        const page: { data: Row[]; meta: { next_cursor: string | null } } = await ok(
          `/deals/${deal.id}/history?limit=4${after ? `&after=${after}` : ''}`,
        );
        paged.push(...page.data);
        after = page.meta.next_cursor;
      } while (after);
      expect(paged).toEqual(all);
      expect(all.filter((r) => r.field === 'title')).toHaveLength(1);

      // as_of: at each event the record as answered right after it, a millisecond before the one before.
      for (const [i, e] of events.entries()) {
        const at = await ok(`/deals/${deal.id}?as_of=${encodeURIComponent(e.timestamp)}`);
        expect(withoutClocks(at.data.deal)).toEqual(withoutClocks(snapshots[i] as Row));
        if (i > 0) {
          const before = await ok(`/deals/${deal.id}?as_of=${encodeURIComponent(earlier(e.timestamp))}`);
          expect(withoutClocks(before.data.deal)).toEqual(withoutClocks(snapshots[i - 1] as Row));
          expect(at.data.deal.updated_at).toBe(e.timestamp);
        }
      }
      const viaTrpc = await s.trpc(org).deals.get.query({ id: deal.id, as_of: events[1]?.timestamp });
      expect(viaTrpc.data.deal.stage_id).toBe(second.id);

      // Derived facts.
      const summary = (await ok(`/deals/${deal.id}/history/summary`)).data;
      const t = events.map((e) => Date.parse(e.timestamp));
      const days = (ms: number) => Math.round((ms / 86_400_000) * 100) / 100;
      expect(summary).toMatchObject({
        deal_id: deal.id,
        history_from: deal.created_at,
        stage: { stage_id: first.id, stage_name: first.name, since: events[4]?.timestamp },
        stages: [
          {
            stage_id: first.id,
            stage_name: first.name,
            visits: 1,
            days: days((t[1] as number) - (t[0] as number)),
          },
          {
            stage_id: second.id,
            stage_name: second.name,
            visits: 1,
            days: days((t[3] as number) - (t[1] as number)),
          },
          {
            stage_id: third.id,
            stage_name: third.name,
            visits: 1,
            days: days((t[4] as number) - (t[3] as number)),
          },
        ],
        expected_close_date: {
          moves: 3,
          pushed: 3,
          pulled_in: 0,
          first: '2027-01-01T12:00:00.000Z',
          current: closes[2],
        },
      });

      // Refusals: a field that is none (nearest named), a date that is none, before the deal was.
      const unknown = await api(`/deals/${deal.id}/history?field=stage_id,custom.regoin`);
      expect(unknown.status).toBe(400);
      expect(unknown.body.error).toContain(
        'field: unknown field "custom.regoin"; did you mean "custom.region"?',
      );
      const stge = await api(`/deals/${deal.id}/history?field=stge_id`);
      expect(stge.body.error).toContain('did you mean "stage_id"?');
      const bad = await api(`/deals/${deal.id}?as_of=yesterday`);
      expect(bad.status).toBe(400);
      expect(bad.body.error).toContain('as_of');
      const before = await api(`/deals/${deal.id}?as_of=2020-01-01T00:00:00Z`);
      expect(before.status, before.text).toBe(404);
      expect((await api(`/deals/${MISSING_ID}/history`)).status).toBe(404);
      expect((await api(`/deals/${deal.id}/history`, { key: s.orgB.apiKey })).status).toBe(404);
      expect((await api(`/deals/${deal.id}?as_of=2030-01-01T00:00:00Z`, { key: s.orgB.apiKey })).status).toBe(
        404,
      );
    });

    it('contacts and companies: their history, as_of, a company rename carried to the deals that follow it', async () => {
      const company = (
        await ok('/companies', { method: 'POST', json: { name: 'Initech', industry: 'Software' } })
      ).data;
      const deal = (
        await ok('/deals', { method: 'POST', json: { title: 'Initech deal', company_id: company.id } })
      ).data;
      expect(deal.company_name).toBe('Initech');
      const contact = (await ok('/contacts', { method: 'POST', json: { name: 'Peter', deal_id: deal.id } }))
        .data;
      const contactBefore = (await ok(`/contacts/${contact.id}`)).data;
      const companyBefore = (await ok(`/companies/${company.id}`)).data;
      await ok(`/contacts/${contact.id}`, {
        method: 'PATCH',
        json: { title: 'Engineer', sentiment: 'negative' },
      });
      await ok(`/companies/${company.id}`, { method: 'PATCH', json: { name: 'Initrode' } });

      const [renamed] = await eventsOf(company.id, 'company.updated');
      const dealNames = (await ok(`/deals/${deal.id}/history?field=company_name`)).data;
      expect(dealNames.map((r: Row) => [r.value, r.event_id])).toEqual([
        ['Initech', expect.any(String)],
        ['Initrode', renamed?.id],
      ]);
      const [changed] = await eventsOf(contact.id, 'contact.updated');
      const titles = (await ok(`/contacts/${contact.id}/history?field=title`)).data;
      expect(titles).toEqual([
        {
          field: 'title',
          value: null,
          from: contact.created_at,
          until: changed?.timestamp,
          actor: expect.any(Object),
          event_id: expect.any(String),
        },
        {
          field: 'title',
          value: 'Engineer',
          from: changed?.timestamp,
          until: null,
          actor: changed?.actor,
          event_id: changed?.id,
        },
      ]);
      const pastContact = (
        await ok(`/contacts/${contact.id}?as_of=${encodeURIComponent(earlier(changed?.timestamp as string))}`)
      ).data;
      expect(pastContact).toEqual({ ...contactBefore, deal: { ...contactBefore.deal, company: 'Initrode' } });
      const pastCompany = (
        await ok(
          `/companies/${company.id}?as_of=${encodeURIComponent(earlier(renamed?.timestamp as string))}`,
        )
      ).data;
      expect(pastCompany.name).toBe('Initech');
      // Its own fields as they were; what is linked to it as it is now (Peter's new title).
      const own = ({ counts: _c, deals: _d, contacts: _p, ...rest }: Row) => withoutClocks(rest);
      expect(own(pastCompany)).toEqual(own(companyBefore));
      expect(pastCompany.contacts[0].title).toBe('Engineer');
      const fieldError = await api(`/companies/${company.id}/history?field=nme`);
      expect(fieldError.body.error).toContain('did you mean "name"?');

      // The events' retention (packages/webhooks/src/retention.ts deletes outbox rows) leaves history be.
      await s.sql('delete from outbox_events where org_id = ?', [org.orgId]);
      expect((await ok(`/contacts/${contact.id}/history?field=title`)).data).toEqual(titles);
    });

    it('records already there when history began: their values from creation, or refused before it', async () => {
      const fresh = (await ok('/deals', { method: 'POST', json: { title: 'Old deal' } })).data;
      // As the migration found it: no rows, then its backfill (a changed deal's values from the migration on).
      await s.sql('delete from field_history where record_id = ?', [fresh.id]);
      await s.sql('update deals set updated_at = now() where id = ?', [fresh.id]);
      await s.sql(
        `insert into field_history (org_id, record_type, record_id, field, value, valid_from)
         select org_id, 'deal', id, '*', jsonb_build_object('title', title), now() from deals where id = ?`,
        [fresh.id],
      );
      const early = await api(`/deals/${fresh.id}?as_of=${encodeURIComponent(fresh.created_at)}`);
      expect(early.status, early.text).toBe(400);
      expect(early.body.error).toMatch(/^as_of: the history of this deal starts at /);
    });
  });
}
