import { issueApiKey } from '@crm/api';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVERS, ISO, MISSING_ID, startTestServer, type TestOrg, type TestServer, UUID } from './harness.ts';
import { mcpClient } from './mcp-client.ts';
import { eventually } from './webhook-receiver.ts';

type Activity = { id: string; type: string; subject: string; occurred_at: string; [k: string]: unknown };

for (const { driver, label, skip } of DRIVERS) {
  describe.skipIf(skip)(`activities on ${label}`, () => {
    let s: TestServer;
    let org: TestOrg;
    beforeAll(async () => {
      s = await startTestServer(driver, { CRM_WEBHOOKS_ALLOW_PRIVATE: 'true' });
    });
    afterAll(async () => {
      await s?.stop();
    });
    const freshOrg = async () => {
      org = await s.newOrg(`activities ${Math.random()}`);
      return org;
    };
    const api = (path: string, init: Parameters<TestServer['api']>[1] = {}) =>
      s.api(path, { key: org.apiKey, ...init });
    const post = (path: string, json: unknown) => api(path, { method: 'POST', json });
    const patch = (path: string, json: unknown) => api(path, { method: 'PATCH', json });
    const made = async (path: string, json: unknown) => {
      const res = await post(path, json);
      expect(res.status, res.text).toBe(201);
      return res.body.data;
    };
    /** A deal with two contacts, and a company. */
    const fixture = async () => {
      const company = await made('/companies', { name: 'Acme', domain: `acme-${Math.random()}.com` });
      const deal = await made('/deals', { title: 'Rollout', company_id: company.id });
      const jane = await made('/contacts', { name: 'Jane', deal_id: deal.id });
      const bob = await made('/contacts', { name: 'Bob', deal_id: deal.id });
      return { company, deal, jane, bob };
    };

    it('logs a call on a deal and its two contacts in one call, by REST and by one MCP tool call', async () => {
      await freshOrg();
      const { deal, jane, bob } = await fixture();
      const occurred = new Date(Date.now() - 60_000).toISOString();
      const call = await post('/activities', {
        type: 'call',
        subject: 'Discovery call',
        body: '**Budget** approved',
        occurred_at: occurred,
        participants: [jane.id],
        links: [
          { type: 'deal', id: deal.id },
          { type: 'contact', id: jane.id },
          { type: 'contact', id: bob.id },
        ],
      });
      expect(call.status, call.text).toBe(201);
      expect(call.body.data).toEqual({
        id: expect.stringMatching(UUID),
        type: 'call',
        subject: 'Discovery call',
        body: '**Budget** approved',
        occurred_at: occurred,
        due_at: null,
        status: null,
        completed_at: null,
        participants: [jane.id],
        links: [
          { type: 'deal', id: deal.id },
          ...[jane.id, bob.id].sort().map((id) => ({ type: 'contact', id })),
        ],
        created_at: expect.stringMatching(ISO),
        updated_at: null,
      });
      expect((await api(`/activities/${call.body.data.id}`)).body.data).toEqual(call.body.data);

      const mcp = await mcpClient(s.url, org.apiKey);
      try {
        const tools = await mcp.listTools();
        expect(tools.tools.map((t) => t.name)).toEqual(
          expect.arrayContaining([
            'activities-create',
            'activities-list',
            'activities-get',
            'activities-update',
            'activities-delete',
            'activities-batch',
            'activities-timeline',
          ]),
        );
        const logged = (await mcp.callTool({
          name: 'activities-create',
          arguments: {
            type: 'meeting',
            subject: 'Demo with the team',
            links: [
              { type: 'deal', id: deal.id },
              { type: 'contact', id: jane.id },
              { type: 'contact', id: bob.id },
            ],
          },
        })) as CallToolResult;
        expect(logged.isError, JSON.stringify(logged.content)).toBeFalsy();
        const data = (logged.structuredContent as { data: Activity }).data;
        expect(data.links).toHaveLength(3);
        const onBob = await api(`/activities?contact_id=${bob.id}`);
        expect(onBob.body.data.map((a: Activity) => a.id)).toEqual([data.id, call.body.data.id]);
      } finally {
        await mcp.close();
      }

      const viaTrpc = await s.trpc(org).activities.create.mutate({
        type: 'note',
        subject: 'From tRPC',
        links: [{ type: 'deal', id: deal.id }],
      });
      expect(viaTrpc.data.type).toBe('note');
    });

    it('refuses what does not fit, naming the field: links, body size, task fields', async () => {
      await freshOrg();
      const { deal, jane } = await fixture();
      const other = await s.newOrg(`other ${Math.random()}`);
      const foreign = (
        await s.api('/deals', { method: 'POST', key: other.apiKey, json: { title: 'Not yours' } })
      ).body.data;
      const link = (type: string, id: string) => ({ type, id });
      const res = await post('/activities', {
        type: 'note',
        subject: 'x',
        links: [link('deal', deal.id), link('contact', jane.id), link('deal', foreign.id)],
      });
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ code: 'not_found', error: 'links[2].id: no deal with this id' });
      // A contact's id given as a deal is no deal.
      const wrongType = await post('/activities', {
        type: 'note',
        subject: 'x',
        links: [link('deal', jane.id)],
      });
      expect(wrongType.status).toBe(404);
      expect(wrongType.body.error).toBe('links[0].id: no deal with this id');
      const participant = await post('/activities', {
        type: 'call',
        subject: 'x',
        participants: [MISSING_ID],
        links: [link('deal', deal.id)],
      });
      expect(participant.status).toBe(404);
      expect(participant.body.error).toBe('participants[0]: no contact with this id');

      const big = await post('/activities', {
        type: 'note',
        subject: 'Long',
        body: 'é'.repeat(32 * 1024 + 1),
        links: [link('deal', deal.id)],
      });
      expect(big.status).toBe(400);
      expect(big.body.error).toContain('body: must be at most 64 KB');
      const fits = await post('/activities', {
        type: 'note',
        subject: 'Long',
        body: 'é'.repeat(32 * 1024),
        links: [link('deal', deal.id)],
      });
      expect(fits.status, fits.text).toBe(201);

      const taskField = await post('/activities', {
        type: 'call',
        subject: 'x',
        status: 'open',
        links: [link('deal', deal.id)],
      });
      expect(taskField.status).toBe(400);
      expect(taskField.body.error).toContain('status: only a task has status (type is call)');
      const taskWhen = await post('/activities', {
        type: 'task',
        subject: 'x',
        occurred_at: new Date().toISOString(),
        links: [link('deal', deal.id)],
      });
      expect(taskWhen.status).toBe(400);
      expect(taskWhen.body.error).toContain('occurred_at:');
      const noLinks = await post('/activities', { type: 'note', subject: 'x', links: [] });
      expect(noLinks.status).toBe(400);
      expect(noLinks.body.error).toContain('links:');
      const tooMany = await post('/activities', {
        type: 'note',
        subject: 'x',
        links: Array.from({ length: 51 }, () => link('deal', deal.id)),
      });
      expect(tooMany.status).toBe(400);
      const patchTask = await patch(`/activities/${fits.body.data.id}`, { due_at: new Date().toISOString() });
      expect(patchTask.status).toBe(400);
      expect(patchTask.body.error).toBe('due_at: only a task has due_at (type is note)');
      // Nothing of the refused ones was stored.
      expect((await api(`/activities?deal_id=${deal.id}`)).body.data).toHaveLength(1);
      // Another organization's activity is not there.
      expect((await s.api(`/activities/${fits.body.data.id}`, { key: other.apiKey })).status).toBe(404);
    });

    it('lists by deal, contact, company, type, status and due date, page by page', async () => {
      await freshOrg();
      const { company, deal, jane, bob } = await fixture();
      const deal2 = await made('/deals', { title: 'Second' });
      const base = Date.now() - 3_600_000;
      const at = (minutes: number) => new Date(base + minutes * 60_000).toISOString();
      const log = (json: Record<string, unknown>) => made('/activities', json);
      const n1 = await log({
        type: 'note',
        subject: 'n1',
        occurred_at: at(1),
        links: [{ type: 'deal', id: deal.id }],
      });
      const c1 = await log({
        type: 'call',
        subject: 'c1',
        occurred_at: at(2),
        links: [
          { type: 'deal', id: deal.id },
          { type: 'contact', id: jane.id },
        ],
      });
      const e1 = await log({
        type: 'email',
        subject: 'e1',
        occurred_at: at(3),
        links: [
          { type: 'company', id: company.id },
          { type: 'contact', id: bob.id },
        ],
      });
      const m1 = await log({
        type: 'meeting',
        subject: 'm1',
        occurred_at: at(4),
        links: [{ type: 'deal', id: deal2.id }],
      });
      const soon = new Date(Date.now() + 86_400_000).toISOString();
      const later = new Date(Date.now() + 10 * 86_400_000).toISOString();
      const t1 = await log({
        type: 'task',
        subject: 't1',
        due_at: soon,
        links: [{ type: 'deal', id: deal.id }],
      });
      const t2 = await log({
        type: 'task',
        subject: 't2',
        due_at: later,
        links: [{ type: 'deal', id: deal.id }],
      });
      const t3 = await log({
        type: 'task',
        subject: 't3',
        due_at: soon,
        status: 'done',
        links: [{ type: 'company', id: company.id }],
      });
      const ids = async (query: string) => {
        const res = await api(`/activities${query}`);
        expect(res.status, res.text).toBe(200);
        return res.body.data.map((a: Activity) => a.subject);
      };
      // Tasks are at their creation time: after the others (an hour ago), in their order.
      expect(await ids('')).toEqual(['t3', 't2', 't1', 'm1', 'e1', 'c1', 'n1']);
      expect(await ids(`?deal_id=${deal.id}`)).toEqual(['t2', 't1', 'c1', 'n1']);
      expect(await ids(`?contact_id=${jane.id}`)).toEqual(['c1']);
      expect(await ids(`?company_id=${company.id}`)).toEqual(['t3', 'e1']);
      expect(await ids(`?deal_id=${deal.id}&contact_id=${jane.id}`)).toEqual(['c1']);
      expect(await ids('?type=meeting')).toEqual(['m1']);
      expect(await ids(`?deal_id=${deal.id}&type=task&status=open`)).toEqual(['t2', 't1']);
      expect(await ids('?status=done')).toEqual(['t3']);
      const tomorrowAndABit = encodeURIComponent(new Date(Date.now() + 2 * 86_400_000).toISOString());
      expect(await ids(`?type=task&status=open&due_before=${tomorrowAndABit}`)).toEqual(['t1']);
      expect(t3).toMatchObject({ status: 'done', completed_at: expect.stringMatching(ISO) });

      // Cursor pages, exactly: every activity once, in order, on the organization's and the deal's list.
      for (const [query, expected] of [
        ['', [t3, t2, t1, m1, e1, c1, n1]],
        [`deal_id=${deal.id}&`, [t2, t1, c1, n1]],
      ] as const) {
        const seen: string[] = [];
        let after: string | null = null;
        let pages = 0;
        do {
          const res = await api(`/activities?${query}limit=2${after ? `&after=${after}` : ''}`);
          expect(res.status, res.text).toBe(200);
          expect(res.body.meta.limit).toBe(2);
          seen.push(...res.body.data.map((a: Activity) => a.id));
          after = res.body.meta.next_cursor;
          pages++;
        } while (after);
        expect(seen).toEqual(expected.map((a) => a.id));
        expect(pages).toBe(Math.ceil(expected.length / 2));
      }
      expect((await api(`/activities?after=${MISSING_ID}`)).status).toBe(400);

      // The query language (docs/api/query.md): fields and links.*, with the list's own filters, sorted, paged.
      const where = (filter: unknown, rest = '') =>
        ids(`?filter=${encodeURIComponent(JSON.stringify(filter))}${rest}`);
      const task = { field: 'type', op: 'eq', value: 'task' };
      expect(await where(task, `&deal_id=${deal.id}`)).toEqual(['t2', 't1']);
      expect(await where(task, `&company_id=${company.id}`)).toEqual(['t3']);
      expect(await where({ field: 'links.id', op: 'eq', value: jane.id })).toEqual(['c1']);
      expect(await where({ field: 'links.type', op: 'eq', value: 'company' })).toEqual(['t3', 'e1']);
      const dueSoon = {
        or: [
          { field: 'type', op: 'eq', value: 'meeting' },
          {
            and: [
              task,
              { field: 'status', op: 'eq', value: 'open' },
              { field: 'due_at', op: 'lt', value: decodeURIComponent(tomorrowAndABit) },
            ],
          },
        ],
      };
      expect(await where(dueSoon)).toEqual(['t1', 'm1']);
      expect(await where({ field: 'subject', op: 'starts_with', value: 'C' })).toEqual(['c1']);
      // Sorted by due date (t1 and t3 are due at once: the id breaks the tie), walked by cursor one by one.
      const byDue = `&sort=due_at&limit=1`;
      const walked: string[] = [];
      let next: string | null = null;
      do {
        const res = await api(
          `/activities?filter=${encodeURIComponent(JSON.stringify(task))}${byDue}${next ? `&after=${next}` : ''}`,
        );
        expect(res.status, res.text).toBe(200);
        expect(Object.keys(res.body.meta).sort()).toEqual(['limit', 'next_cursor']);
        walked.push(...res.body.data.map((a: Activity) => a.subject));
        next = res.body.meta.next_cursor;
      } while (next);
      expect(walked).toEqual(['t1', 't3', 't2']);
      expect(await ids('?sort=-occurred_at')).toEqual(['t3', 't2', 't1', 'm1', 'e1', 'c1', 'n1']);
      const body = await post('/activities/query', { filter: dueSoon, limit: 10 });
      expect(body.status, body.text).toBe(200);
      expect(body.body).toEqual(
        (await api(`/activities?limit=10&filter=${encodeURIComponent(JSON.stringify(dueSoon))}`)).body,
      );
      const unknown = await api(
        `/activities?filter=${encodeURIComponent('{"field": "staus", "op": "eq", "value": "open"}')}`,
      );
      expect(unknown.status).toBe(400);
      expect(unknown.body.error).toBe('filter/field: unknown field "staus"; did you mean "status"?');
      const unsortable = await api('/activities?sort=links.id');
      expect(unsortable.status).toBe(400);
      expect(unsortable.body.error).toMatch(/^sort\/0: "links.id" cannot be sorted by/);
      // The feed's filter reads an activity's links in its data.
      const feed = await api(
        `/events?types=activity.created&filter=${encodeURIComponent(JSON.stringify({ field: 'links.id', op: 'in', value: [jane.id, company.id] }))}`,
      );
      expect(feed.status, feed.text).toBe(200);
      expect(feed.body.data.map((e: { data: Activity }) => e.data.subject)).toEqual(['c1', 'e1', 't3']);

      // A task open -> done -> open through PATCH; the update's event carries the changes.
      const done = await patch(`/activities/${t1.id}`, { status: 'done' });
      expect(done.status, done.text).toBe(200);
      expect(done.body.data).toMatchObject({ status: 'done', completed_at: expect.stringMatching(ISO) });
      expect(await ids(`?deal_id=${deal.id}&status=open`)).toEqual(['t2']);
      const reopened = await patch(`/activities/${t1.id}`, { status: 'open', due_at: later });
      expect(reopened.body.data).toMatchObject({ status: 'open', completed_at: null, due_at: later });
      // Participants replaced: one dropped stays linked until links say otherwise.
      const withBob = await patch(`/activities/${c1.id}`, { participants: [bob.id] });
      expect(withBob.status, withBob.text).toBe(200);
      expect(withBob.body.data.participants).toEqual([bob.id]);
      const withoutBob = (await patch(`/activities/${c1.id}`, { participants: [] })).body.data;
      expect(withoutBob.participants).toEqual([]);
      expect(withoutBob.links).toContainEqual({ type: 'contact', id: bob.id });
      expect(await ids(`?contact_id=${bob.id}`)).toEqual(['e1', 'c1']);
      // Links replaced by PATCH; the deal loses it.
      const moved = await patch(`/activities/${n1.id}`, { links: [{ type: 'deal', id: deal2.id }] });
      expect(moved.status, moved.text).toBe(200);
      expect(moved.body.data.links).toEqual([{ type: 'deal', id: deal2.id }]);
      expect(await ids(`?deal_id=${deal2.id}`)).toEqual(['m1', 'n1']);

      // Deleting a contact's deal removes its links; the activities stay (found by id, and in the list).
      expect((await api(`/deals/${deal.id}`, { method: 'DELETE' })).status).toBe(200);
      expect(await ids(`?contact_id=${jane.id}`)).toEqual([]);
      expect((await api(`/activities/${c1.id}`)).body.data.links).toEqual([]);
      expect((await api(`/activities/${e1.id}`)).body.data.links).toEqual([
        { type: 'company', id: company.id },
      ]);
      // So does deleting a company; a batch item's missing link is named with its index.
      expect((await api(`/companies/${company.id}`, { method: 'DELETE' })).status).toBe(200);
      expect((await api(`/activities/${e1.id}`)).body.data.links).toEqual([]);
      expect(await ids(`?company_id=${company.id}`)).toEqual([]);
      const batch = await post('/activities/batch', {
        items: [
          { type: 'note', subject: 'ok', links: [{ type: 'deal', id: deal2.id }] },
          { type: 'note', subject: 'gone', links: [{ type: 'deal', id: deal.id }] },
        ],
      });
      expect(batch.status).toBe(404);
      expect(batch.body.error).toBe('items[1].links[0].id: no deal with this id');
      expect(await ids(`?deal_id=${deal2.id}`)).toEqual(['m1', 'n1']);
      expect((await api(`/activities/${t2.id}`, { method: 'DELETE' })).body).toEqual({ success: true });
      expect((await api(`/activities/${t2.id}`)).status).toBe(404);
      expect((await api(`/activities/${t2.id}`, { method: 'DELETE' })).status).toBe(404);
    });

    it('shows in the deal’s recent_activities and moves its last_activity_at; the timeline merges it all', async () => {
      await freshOrg();
      const { deal, jane } = await fixture();
      const created = (await api(`/deals/${deal.id}`)).body.data;
      const lastBefore = created.deal.last_activity_at as string;
      const past = new Date(Date.parse(lastBefore) - 86_400_000).toISOString();
      // Earlier than the deal's last activity: listed, but the clock stays.
      const old = await made('/activities', {
        type: 'email',
        subject: 'Intro e-mail',
        occurred_at: past,
        links: [{ type: 'deal', id: deal.id }],
      });
      expect((await api(`/deals/${deal.id}`)).body.data.deal.last_activity_at).toBe(lastBefore);
      const stage = (await api('/pipeline/stages')).body.data[1];
      expect((await patch(`/deals/${deal.id}`, { stage_id: stage.id, value: 5000 })).status).toBe(200);
      const callAt = new Date(Date.now() + 1000).toISOString();
      await new Promise((r) => setTimeout(r, 1100));
      const call = await made('/activities', {
        type: 'call',
        subject: 'Pricing call',
        occurred_at: callAt,
        participants: [jane.id],
        links: [{ type: 'deal', id: deal.id }],
      });
      // A future meeting and an open task do not move the clock.
      await made('/activities', {
        type: 'meeting',
        subject: 'Next week',
        occurred_at: new Date(Date.now() + 7 * 86_400_000).toISOString(),
        links: [{ type: 'deal', id: deal.id }],
      });
      const task = await made('/activities', {
        type: 'task',
        subject: 'Send proposal',
        due_at: new Date(Date.now() + 86_400_000).toISOString(),
        links: [{ type: 'deal', id: deal.id }],
      });
      let detail = (await api(`/deals/${deal.id}`)).body.data;
      expect(detail.deal.last_activity_at).toBe(callAt);
      // The contract's shape: {id, type, description, created_at}, merged by time, newest first.
      for (const a of detail.recent_activities)
        expect(Object.keys(a).sort()).toEqual(['created_at', 'description', 'id', 'type']);
      expect(
        detail.recent_activities.map((a: { type: string; description: string }) => [a.type, a.description]),
      ).toEqual([
        ['meeting', 'Next week'],
        ['task', 'Send proposal'],
        ['call', 'Pricing call'],
        ['deal_updated', 'Updated value'],
        ['stage_changed', expect.stringContaining('Stage changed')],
        ['contact_added', expect.any(String)],
        ['contact_added', expect.any(String)],
        ['deal_created', expect.any(String)],
        ['email', 'Intro e-mail'],
      ]);
      expect(detail.recent_activities.find((a: { id: string }) => a.id === call.id)).toEqual({
        id: call.id,
        type: 'call',
        description: 'Pricing call',
        created_at: callAt,
      });
      // Done: the task moves the clock to when it was done.
      const done = (await patch(`/activities/${task.id}`, { status: 'done' })).body.data;
      detail = (await api(`/deals/${deal.id}`)).body.data;
      expect(detail.deal.last_activity_at).toBe(done.completed_at);

      // Still at most 20, the newest.
      await s.api('/activities/batch', {
        method: 'POST',
        key: org.apiKey,
        json: {
          items: Array.from({ length: 25 }, (_, i) => ({
            type: 'note',
            subject: `note ${i}`,
            occurred_at: new Date(Date.parse(past) - (i + 1) * 1000).toISOString(),
            links: [{ type: 'deal', id: deal.id }],
          })),
        },
      });
      detail = (await api(`/deals/${deal.id}`)).body.data;
      expect(detail.recent_activities).toHaveLength(20);
      expect(detail.recent_activities.at(-1).description).toBe('note 10');

      // An analysis, then the timeline: every kind, newest first, paged by one cursor.
      expect((await post(`/deals/${deal.id}/analyze`, undefined)).status).toBe(200);
      const full = await api(`/deals/${deal.id}/timeline?limit=100`);
      expect(full.status, full.text).toBe(200);
      const entries = full.body.data as Array<{ kind: string; id: string; at: string; [k: string]: unknown }>;
      expect(full.body.meta.next_cursor).toBeNull();
      expect(
        entries
          .map((e) => e.kind)
          .filter((k, i, all) => all.indexOf(k) === i)
          .sort(),
      ).toEqual(['activity', 'analysis', 'field_change', 'stage_change']);
      // 29 activities, the stage change, the value change, and the analysis (its deal_analyzed activity is not a change).
      expect(entries).toHaveLength(29 + 2 + 1);
      const order = entries.map((e) => [e.at, e.id]);
      expect(order).toEqual(
        [...order].sort((x, y) =>
          x[0] === y[0]
            ? (y[1] as string).localeCompare(x[1] as string)
            : (y[0] as string).localeCompare(x[0] as string),
        ),
      );
      expect(entries[0]).toMatchObject({ kind: 'activity', activity: { subject: 'Next week' } });
      expect(entries.find((e) => e.kind === 'stage_change')).toMatchObject({
        changes: { stage: { to: stage.name } },
      });
      expect(entries.find((e) => e.kind === 'field_change')).toMatchObject({
        changes: { value: { to: 5000 } },
      });
      expect(entries.find((e) => e.kind === 'analysis')).toMatchObject({
        analysis: { win_probability: expect.any(Number) },
      });
      const paged: string[] = [];
      let after: string | null = null;
      do {
        const res = await api(`/deals/${deal.id}/timeline?limit=7${after ? `&after=${after}` : ''}`);
        expect(res.status, res.text).toBe(200);
        paged.push(...res.body.data.map((e: { id: string }) => e.id));
        after = res.body.meta.next_cursor;
      } while (after);
      expect(paged).toEqual(entries.map((e) => e.id));
      expect((await api(`/deals/${deal.id}/timeline?after=bm90LWEtY3Vyc29y`)).status).toBe(400);
      expect((await api(`/deals/${MISSING_ID}/timeline`)).status).toBe(404);
      expect(old.id).toMatch(UUID);
    });

    it('a person’s export lists the activities linked to them; their erasure redacts them there', async () => {
      await freshOrg();
      const { deal } = await fixture();
      const person = await made('/contacts', {
        name: 'Zora Quillfeather',
        email: 'zora@quill-erase.example',
        deal_id: deal.id,
      });
      const call = await made('/activities', {
        type: 'call',
        subject: 'Call with Zora Quillfeather',
        body: 'Wrote to zora@quill-erase.example afterwards',
        participants: [person.id],
        links: [{ type: 'deal', id: deal.id }],
      });
      const exported = await api(`/contacts/${person.id}/export`);
      expect(exported.status, exported.text).toBe(200);
      expect(exported.body.data.logged_activities).toEqual([call]);
      const erased = await post(`/contacts/${person.id}/erase`, undefined);
      expect(erased.status, erased.text).toBe(200);
      expect(erased.body.data.removed).toMatchObject({ logged_activities_redacted: 1 });
      const after = (await api(`/activities/${call.id}`)).body.data;
      expect(after).toMatchObject({
        subject: 'Call with [erased]',
        body: 'Wrote to [erased] afterwards',
        participants: [],
        links: [{ type: 'deal', id: deal.id }],
      });
      const traces = await s.sql(
        "select id from engagements where subject like '%Quillfeather%' or body like '%quill-erase%'",
      );
      expect(traces).toEqual([]);
    });

    it('emits activity.created and activity.updated to the feed; scopes guard the operations', async () => {
      await freshOrg();
      const { deal } = await fixture();
      const note = await made('/activities', {
        type: 'note',
        subject: 'Hello',
        links: [{ type: 'deal', id: deal.id }],
      });
      await patch(`/activities/${note.id}`, { subject: 'Hello again', body: 'text' });
      const events = await eventually('both events in the feed', async () => {
        const feed = await api('/events?types=activity.created,activity.updated');
        expect(feed.status, feed.text).toBe(200);
        return feed.body.data.length === 2 ? feed : undefined;
      });
      expect(events.body.data.map((e: { type: string }) => e.type)).toEqual([
        'activity.created',
        'activity.updated',
      ]);
      expect(events.body.data[0].data).toEqual(note);
      expect(events.body.data[1].changes).toEqual({
        subject: { from: 'Hello', to: 'Hello again' },
        body: { from: null, to: 'text' },
      });
      const hook = await post('/webhooks', {
        url: 'http://127.0.0.1:9/hooks',
        events: ['activity.created'],
      });
      expect(hook.status, hook.text).toBe(201);
      // The contract's kinds are still exactly the eight, first.
      const all = (await api('/events?types=deal.created')).status;
      expect(all).toBe(200);

      const fork = () => s.running.db.orm.em.fork();
      const { api_key: reader } = await issueApiKey(fork(), org.orgId, { scopes: ['activities:read'] });
      expect((await api('/activities', { key: reader })).status).toBe(200);
      expect((await api(`/deals/${deal.id}/timeline`, { key: reader })).status).toBe(200);
      const refused = await api('/activities', {
        key: reader,
        method: 'POST',
        json: { type: 'note', subject: 'No', links: [{ type: 'deal', id: deal.id }] },
      });
      expect(refused.status).toBe(403);
      expect(refused.body.code).toBe('insufficient_scope');
      const { api_key: dealsOnly } = await issueApiKey(fork(), org.orgId, { scopes: ['deals:read'] });
      expect((await api('/activities', { key: dealsOnly })).status).toBe(403);
      const { api_key: writer } = await issueApiKey(fork(), org.orgId, { scopes: ['activities:write'] });
      expect((await api(`/activities/${note.id}`, { key: writer, method: 'DELETE' })).status).toBe(200);
    });
  });
}
