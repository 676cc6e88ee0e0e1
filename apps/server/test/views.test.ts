import { issueApiKey } from '@crm/api';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  describeOnEachDatabase,
  ISO,
  MISSING_ID,
  startTestServer,
  type TestOrg,
  type TestServer,
  UUID,
} from './harness.ts';
import { mcpClient } from './mcp-client.ts';

// biome-ignore lint/suspicious/noExplicitAny: rows are the API's JSON
type Row = Record<string, any>;

const ids = (rows: Row[]) => rows.map((r) => r.id as string);
const q = (tree: unknown) => encodeURIComponent(JSON.stringify(tree));

/** What every view below filters by: big deals of EMEA or APAC. */
const BIG_EMEA_APAC = {
  and: [
    { field: 'value', op: 'gte', value: 20000 },
    { field: 'custom.region', op: 'in', value: ['emea', 'apac'] },
  ],
};

describeOnEachDatabase(
  (label) => `saved views on ${label}`,
  (driver) => {
    let s: TestServer;
    let org: TestOrg;
    /** The organization's deals, as created. */
    const deals: Row[] = [];
    beforeAll(async () => {
      s = await startTestServer(driver);
      org = await s.newOrg('views');
      const define = async (object: string, json: unknown) =>
        expect((await post(`/custom-fields/${object}`, json)).status).toBe(201);
      await define('deals', {
        key: 'region',
        type: 'select',
        options: ['emea', 'apac', 'amer'].map((value) => ({ value })),
      });
      // Text for now: a view's `contains` on it stops fitting when it is converted to a number.
      await define('deals', { key: 'seats', type: 'text' });
      await define('deals', { key: 'legacy', type: 'text' });
      const regions = ['emea', 'apac', 'amer'];
      for (let i = 0; i < 12; i++) {
        const made = await post('/deals', {
          title: `Deal ${String(i).padStart(2, '0')}`,
          value: 5000 * (i + 1),
          custom: { region: regions[i % 3], seats: String(10 * i), legacy: `L${i}` },
        });
        expect(made.status, made.text).toBe(201);
        if (i % 2 === 0) {
          deals.push(made.body.data);
          continue;
        }
        // Every other deal pinned to a lifecycle stage of its own (the contract's list parameter).
        const pinned = await patch(`/deals/${made.body.data.id}`, { lifecycle_stage: 'mql' });
        expect(pinned.status, pinned.text).toBe(200);
        deals.push(pinned.body.data);
      }
    });
    afterAll(async () => {
      await s?.stop();
    });

    const api = (path: string, init: Parameters<TestServer['api']>[1] = {}) =>
      s.api(path, { key: org.apiKey, ...init });
    const post = (path: string, json: unknown, key = org.apiKey) => api(path, { method: 'POST', json, key });
    const patch = (path: string, json: unknown) => api(path, { method: 'PATCH', json });
    const saveView = async (json: Row) => {
      const res = await post('/views', json);
      expect(res.status, res.text).toBe(201);
      return res.body.data as Row;
    };

    it('creates, reads, lists, changes and deletes a view', async () => {
      const view = await saveView({
        name: 'Big EMEA and APAC',
        object: 'deals',
        filter: BIG_EMEA_APAC,
        sort: '-value',
        description: 'The ones to call this week',
      });
      expect(view).toEqual({
        id: expect.stringMatching(UUID),
        name: 'Big EMEA and APAC',
        object: 'deals',
        filter: BIG_EMEA_APAC,
        sort: '-value',
        description: 'The ones to call this week',
        created_at: expect.stringMatching(ISO),
        updated_at: null,
      });
      expect((await api(`/views/${view.id}`)).body).toEqual({ data: view });

      const contactsView = await saveView({ name: 'Champions', object: 'contacts', sort: 'name' });
      expect(contactsView).toMatchObject({ filter: null, sort: 'name', description: null });
      const all = await api('/views');
      expect(all.status, all.text).toBe(200);
      expect(all.body.meta).toMatchObject({ total: 2, limit: 50, offset: 0, next_cursor: null });
      expect(ids(all.body.data)).toEqual([contactsView.id, view.id]);
      const ofDeals = await api('/views?object=deals');
      expect(ofDeals.body).toEqual({
        data: [view],
        meta: { total: 1, limit: 50, offset: 0, next_cursor: null },
      });
      const first = await api('/views?limit=1');
      expect(first.body.meta.next_cursor).toBe(contactsView.id);
      const second = await api(`/views?limit=1&after=${first.body.meta.next_cursor}`);
      expect(ids(second.body.data)).toEqual([view.id]);
      expect(second.body.meta.next_cursor).toBeNull();

      const changed = await patch(`/views/${view.id}`, {
        name: 'Big EMEA and APAC deals',
        sort: 'value',
        description: null,
      });
      expect(changed.status, changed.text).toBe(200);
      expect(changed.body.data).toEqual({
        ...view,
        name: 'Big EMEA and APAC deals',
        sort: 'value',
        description: null,
        updated_at: expect.stringMatching(ISO),
      });
      // The filter can be removed (null) and given again; the object does not change.
      const bare = await patch(`/views/${view.id}`, { filter: null, sort: null });
      expect(bare.body.data).toMatchObject({ filter: null, sort: null });
      expect((await patch(`/views/${view.id}`, { filter: BIG_EMEA_APAC })).body.data.filter).toEqual(
        BIG_EMEA_APAC,
      );
      const moved = await patch(`/views/${view.id}`, { object: 'contacts' });
      expect(moved.status).toBe(400);
      expect(moved.body.error).toMatch(/object/);

      expect((await api(`/views/${contactsView.id}`, { method: 'DELETE' })).body).toEqual({ success: true });
      expect((await api(`/views/${contactsView.id}`)).status).toBe(404);
      expect((await api(`/views/${contactsView.id}`, { method: 'DELETE' })).status).toBe(404);
      expect((await patch(`/views/${MISSING_ID}`, { name: 'x' })).status).toBe(404);
      expect((await api('/views')).body.meta.total).toBe(1);
      await api(`/views/${view.id}`, { method: 'DELETE' });
    });

    it('a name is unique per object, case aside: 409 naming the view that has it', async () => {
      const view = await saveView({ name: 'Pipeline review', object: 'deals', sort: '-value' });
      const twin = await post('/views', { name: 'pipeline REVIEW', object: 'deals' });
      expect(twin.status).toBe(409);
      expect(twin.body).toEqual({
        error: `name: "pipeline REVIEW" is already the name of view ${view.id} of deals`,
        code: 'conflict',
        conflicting_id: view.id,
      });
      // Another object's views are another list of names.
      const ofCompanies = await saveView({ name: 'Pipeline review', object: 'companies' });
      const other = await saveView({ name: 'Forecast', object: 'deals' });
      const taken = await patch(`/views/${other.id}`, { name: 'PIPELINE review' });
      expect(taken.status).toBe(409);
      expect(taken.body.conflicting_id).toBe(view.id);
      // Its own name in another case is no conflict.
      expect((await patch(`/views/${view.id}`, { name: 'Pipeline Review' })).status).toBe(200);
      // Concurrent creates of one name: one view, the others a 409 naming it.
      const racers = await Promise.all(
        Array.from({ length: 5 }, () => post('/views', { name: 'Race', object: 'deals' })),
      );
      expect(racers.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409]);
      const winner = racers.find((r) => r.status === 201)?.body.data.id;
      for (const r of racers.filter((x) => x.status === 409)) expect(r.body.conflicting_id).toBe(winner);
      for (const id of [view.id, ofCompanies.id, other.id, winner])
        expect((await api(`/views/${id}`, { method: 'DELETE' })).status).toBe(200);
    });

    it('an organization keeps at most 500 views: the next is a 400 naming the limit, shown in /usage/limits', async () => {
      const other = await s.newOrg('Many views');
      // 499 written directly (500 creates would be most of this file's time); the 500th and 501st by the API.
      await s.sql(
        `insert into saved_views (id, org_id, name, object, created_at)
         select gen_random_uuid(), ?, 'View ' || i, 'deals', now() from generate_series(1, 499) i`,
        [other.orgId],
      );
      expect((await post('/views', { name: 'The 500th', object: 'contacts' }, other.apiKey)).status).toBe(
        201,
      );
      const over = await post('/views', { name: 'One more', object: 'deals' }, other.apiKey);
      expect(over.status).toBe(400);
      expect(over.body).toEqual({
        error: 'An organization can have at most 500 saved views; delete one first',
        code: 'invalid_request',
      });
      const limits = await s.api('/usage/limits', { key: other.apiKey });
      expect(limits.body.data.saved_views).toEqual({ used: 500, limit: 500 });
      // Another organization's views are not counted.
      expect((await api('/usage/limits')).body.data.saved_views.used).toBeLessThan(500);
    });

    it('a filter or sort that does not fit the object is a 400 naming the node, and nothing is saved', async () => {
      const cases: Array<[Row, string]> = [
        [
          {
            name: 'x',
            object: 'deals',
            filter: { and: [BIG_EMEA_APAC.and[0], { field: 'custom.regoin', op: 'eq', value: 'emea' }] },
          },
          'filter/and/1/field: unknown field "custom.regoin"; did you mean "custom.region"?',
        ],
        [
          { name: 'x', object: 'deals', filter: { field: 'value', op: 'contains', value: '5' } },
          'filter/op: "contains" does not apply to value (a number field); use one of eq, neq, lt, lte, gt, gte, between, in, nin, is_null',
        ],
        [
          { name: 'x', object: 'deals', filter: { field: 'custom.region', op: 'eq', value: 'mars' } },
          'filter/value: "mars" is not a value of custom.region ("emea", "apac", "amer")',
        ],
        [
          // A deal's field is not a company's.
          { name: 'x', object: 'companies', filter: { field: 'stage_type', op: 'eq', value: 'open' } },
          'filter/field: unknown field "stage_type" (the fields of companies: see docs/api/query.md)',
        ],
        [
          { name: 'x', object: 'deals', sort: '-valeu' },
          'sort/0: unknown field "valeu"; did you mean "value"?',
        ],
        [
          { name: 'x', object: 'activities', sort: 'occurred_at,occurred_at' },
          'sort/1: "occurred_at" is named twice',
        ],
      ];
      for (const [json, error] of cases) {
        const res = await post('/views', json);
        expect(res.status, JSON.stringify(json)).toBe(400);
        expect(res.body).toEqual({ error, code: 'invalid_request' });
      }
      for (const [json, field] of [
        [{ object: 'deals' }, 'name'],
        [{ name: '   ', object: 'deals' }, 'name'],
        [{ name: 'x'.repeat(101), object: 'deals' }, 'name'],
        [{ name: 'x', object: 'leads' }, 'object'],
        [{ name: 'x', object: 'deals', filter: 'value > 5' }, 'filter'],
      ] as const) {
        const res = await post('/views', json);
        expect(res.status, JSON.stringify(json)).toBe(400);
        expect(res.body.error).toMatch(new RegExp(`^${field}`));
      }
      const kept = await saveView({ name: 'Kept', object: 'deals', filter: BIG_EMEA_APAC });
      const bad = await patch(`/views/${kept.id}`, {
        name: 'Renamed',
        filter: { not: { field: 'custom.region', op: 'has_any', value: ['emea'] } },
      });
      expect(bad.body).toEqual({
        error:
          'filter/not/op: "has_any" does not apply to custom.region (a enum field); use one of eq, neq, in, nin, is_null',
        code: 'invalid_request',
      });
      expect((await api(`/views/${kept.id}`)).body.data).toEqual(kept);
      expect((await api('/views')).body.data).toEqual([kept]);
      await api(`/views/${kept.id}`, { method: 'DELETE' });
    });

    it('a list by a view answers as the list by the same filter and sort, on GET and POST …/query', async () => {
      const view = await saveView({
        name: 'Applied',
        object: 'deals',
        filter: BIG_EMEA_APAC,
        sort: '-value',
      });
      const byView = await api(`/deals?view=${view.id}`);
      expect(byView.status, byView.text).toBe(200);
      const byFilter = await api(`/deals?filter=${q(BIG_EMEA_APAC)}&sort=-value`);
      expect(byView.body).toEqual(byFilter.body);
      const expected = deals
        .filter((d) => d.value >= 20000 && ['emea', 'apac'].includes(d.custom.region))
        .sort((a, b) => b.value - a.value);
      expect(ids(byView.body.data)).toEqual(ids(expected));
      expect(byView.body.meta.total).toBe(expected.length);
      const viaPost = await post('/deals/query', { view: view.id });
      expect(viaPost.status, viaPost.text).toBe(200);
      expect(viaPost.body).toEqual(byView.body);

      // Pages by cursor under the view's sort, as the list by its filter does.
      const page1 = await api(`/deals?view=${view.id}&limit=2`);
      const page2 = await api(`/deals?view=${view.id}&limit=2&after=${page1.body.meta.next_cursor}`);
      expect([...ids(page1.body.data), ...ids(page2.body.data)]).toEqual(ids(expected).slice(0, 4));

      // The request's filter and the contract's own parameters are ANDed with the view's.
      const extra = { field: 'value', op: 'lte', value: 40000 };
      const narrowed = await api(`/deals?view=${view.id}&filter=${q(extra)}&lifecycle_stage=mql`);
      const anded = await api(
        `/deals?filter=${q({ and: [...BIG_EMEA_APAC.and, extra] })}&sort=-value&lifecycle_stage=mql`,
      );
      expect(narrowed.body).toEqual(anded.body);
      expect(ids(narrowed.body.data)).toEqual(
        ids(expected.filter((d) => d.value <= 40000 && d.lifecycle_stage === 'mql')),
      );
      expect(narrowed.body.data.length).toBeGreaterThan(0);
      expect(narrowed.body.data.length).toBeLessThan(expected.length);
      const narrowedPost = await post('/deals/query', {
        view: view.id,
        filter: extra,
        lifecycle_stage: 'mql',
      });
      expect(narrowedPost.body).toEqual(narrowed.body);

      // The request's sort overrides the view's.
      const resorted = await api(`/deals?view=${view.id}&sort=title`);
      expect(resorted.body).toEqual((await api(`/deals?filter=${q(BIG_EMEA_APAC)}&sort=title`)).body);
      expect(resorted.body.data.map((d: Row) => d.title)).toEqual(expected.map((d) => d.title).sort());

      // A view with a sort only: every deal in its order, the total the kept count.
      const sorted = await saveView({ name: 'Smallest first', object: 'deals', sort: 'value' });
      const all = await api(`/deals?view=${sorted.id}&limit=100`);
      expect(ids(all.body.data)).toEqual(ids([...deals].sort((a, b) => a.value - b.value)));
      expect(all.body.meta.total).toBe(deals.length);

      // A sync by a view: its filter applies to the changed deals (its sort does not: sync order).
      const since = new Date(Date.now() - 3_600_000).toISOString();
      const synced = await api(`/deals?view=${view.id}&updated_since=${encodeURIComponent(since)}&limit=100`);
      expect(synced.status, synced.text).toBe(200);
      expect(ids(synced.body.data).sort()).toEqual(ids(expected).sort());
    });

    it('every list applies views of its own object: contacts, companies, activities', async () => {
      const deal = deals[0] as Row;
      for (const name of ['Ada', 'Bob', 'Cy'])
        expect((await post('/contacts', { name, deal_id: deal.id })).status).toBe(201);
      for (const name of ['Acme', 'Beta', 'Gamma'])
        expect((await post('/companies', { name })).status).toBe(201);
      for (const subject of ['Call Ada', 'Mail Bob'])
        expect(
          (await post('/activities', { type: 'call', subject, links: [{ type: 'deal', id: deal.id }] }))
            .status,
        ).toBe(201);
      const lists: Array<[string, Row, string]> = [
        ['contacts', { field: 'name', op: 'in', value: ['Ada', 'Cy'] }, '-name'],
        ['companies', { field: 'name', op: 'starts_with', value: 'a' }, 'name'],
        ['activities', { field: 'subject', op: 'contains', value: 'ada' }, 'occurred_at'],
      ];
      for (const [object, filter, sort] of lists) {
        const view = await saveView({ name: `Mine of ${object}`, object, filter, sort });
        const byView = await api(`/${object}?view=${view.id}`);
        expect(byView.status, byView.text).toBe(200);
        expect(byView.body.data.length, object).toBeGreaterThan(0);
        expect(byView.body, object).toEqual((await api(`/${object}?filter=${q(filter)}&sort=${sort}`)).body);
        expect((await post(`/${object}/query`, { view: view.id })).body, object).toEqual(byView.body);
      }
    });

    it('a view of another object, or an id the organization has no view by, is a 400 naming view', async () => {
      const ofContacts = await saveView({ name: 'People', object: 'contacts', sort: 'name' });
      const wrong = await api(`/deals?view=${ofContacts.id}`);
      expect(wrong.status).toBe(400);
      expect(wrong.body).toEqual({
        error: `view: saved view ${ofContacts.id} ("People") is a view of contacts, not of deals; apply it to GET /contacts`,
        code: 'invalid_request',
      });
      expect((await post('/companies/query', { view: ofContacts.id })).body.error).toMatch(
        /^view: .* is a view of contacts, not of companies/,
      );
      const missing = await api(`/deals?view=${MISSING_ID}`);
      expect(missing.status).toBe(400);
      expect(missing.body).toEqual({
        error: 'view: no saved view with this id (deleted?); see GET /views',
        code: 'invalid_request',
      });
      // Another organization's view: the same answer as an id nobody has, on every list and door.
      const other = await s.newOrg('views elsewhere');
      const theirs = await post(
        '/views',
        { name: 'Theirs', object: 'deals', filter: BIG_EMEA_APAC.and[0] },
        other.apiKey,
      );
      expect(theirs.status).toBe(201);
      const id = theirs.body.data.id;
      expect((await api(`/deals?view=${id}`)).body).toEqual(missing.body);
      expect((await post('/deals/query', { view: id })).body).toEqual(missing.body);
      expect((await api(`/views/${id}`)).status).toBe(404);
      expect((await patch(`/views/${id}`, { name: 'Mine now' })).status).toBe(404);
      expect((await api(`/views/${id}`, { method: 'DELETE' })).status).toBe(404);
      expect(ids((await api('/views?limit=100')).body.data)).not.toContain(id);
      expect((await s.api(`/views/${id}`, { key: other.apiKey })).body.data.name).toBe('Theirs');
    });

    it('a view whose custom field changed type is a 400 naming the view and the node, never a 500; archived fields still filter', async () => {
      const filter = {
        and: [
          { field: 'value', op: 'gte', value: 10000 },
          { field: 'custom.seats', op: 'contains', value: '0' },
        ],
      };
      const view = await saveView({ name: 'Seats', object: 'deals', filter, sort: 'custom.seats' });
      const archivedOnly = await saveView({
        name: 'Legacy',
        object: 'deals',
        filter: { field: 'custom.legacy', op: 'eq', value: 'L3' },
      });
      expect((await api(`/deals?view=${view.id}`)).status).toBe(200);
      // Archived: its values stay readable, so a view on it still answers.
      expect((await api('/custom-fields/deals/legacy', { method: 'DELETE' })).status).toBe(200);
      const legacy = await api(`/deals?view=${archivedOnly.id}`);
      expect(legacy.status, legacy.text).toBe(200);
      expect(ids(legacy.body.data)).toEqual([deals[3]?.id]);

      const converted = await post('/custom-fields/deals/seats/convert', { type: 'number' });
      expect(converted.status, converted.text).toBe(200);
      const broken = await api(`/deals?view=${view.id}`);
      expect(broken.status).toBe(400);
      expect(broken.body).toEqual({
        error: `view: saved view ${view.id} ("Seats") no longer fits the fields of deals: filter/and/1/op: "contains" does not apply to custom.seats (a number field); use one of eq, neq, lt, lte, gt, gte, between, in, nin, is_null (change it with PATCH /views/${view.id})`,
        code: 'invalid_request',
      });
      expect((await post('/deals/query', { view: view.id, sort: '-value' })).status).toBe(400);
      // The list itself is untouched, and the view can be read and mended.
      expect((await api('/deals')).status).toBe(200);
      expect((await api(`/views/${view.id}`)).body.data.filter).toEqual(filter);
      const mended = await patch(`/views/${view.id}`, {
        filter: { and: [filter.and[0], { field: 'custom.seats', op: 'gte', value: 50 }] },
      });
      expect(mended.status, mended.text).toBe(200);
      const fixed = await api(`/deals?view=${view.id}`);
      expect(fixed.status, fixed.text).toBe(200);
      expect(ids(fixed.body.data)).toEqual(
        ids(
          deals
            .filter((d) => d.value >= 10000 && Number(d.custom.seats) >= 50)
            .sort((a, b) => Number(a.custom.seats) - Number(b.custom.seats)),
        ),
      );
      // A view sorted by a field that can no longer be sorted by names its sort key.
      await post('/custom-fields/deals', {
        key: 'flags',
        type: 'text',
      });
      const flagged = await saveView({ name: 'Flagged', object: 'deals', sort: 'custom.flags' });
      expect(
        (
          await post('/custom-fields/deals/flags/convert', {
            type: 'multi_select',
            options: [{ value: 'x' }],
          })
        ).status,
      ).toBe(200);
      const unsortable = await api(`/deals?view=${flagged.id}`);
      expect(unsortable.status).toBe(400);
      expect(unsortable.body.error).toBe(
        `view: saved view ${flagged.id} ("Flagged") no longer fits the fields of deals: sort/0: "custom.flags" cannot be sorted by (a multi-select field) (change it with PATCH /views/${flagged.id})`,
      );
      // The request's own sort replaces the view's, so the list answers.
      expect((await api(`/deals?view=${flagged.id}&sort=value`)).status).toBe(200);
    });

    it('scopes: views:read and views:write manage views; a list applies one with its own read scope', async () => {
      const fork = () => s.running.db.orm.em.fork();
      const key = async (scopes: string[]) => (await issueApiKey(fork(), org.orgId, { scopes })).api_key;
      const [reader, writer, dealsOnly] = await Promise.all([
        key(['views:read']),
        key(['views:write']),
        key(['deals:read']),
      ]);
      const view = (await post('/views', { name: 'Scoped', object: 'deals', filter: BIG_EMEA_APAC }, writer))
        .body.data;
      expect(view?.id).toMatch(UUID);
      expect((await api('/views', { key: reader })).status).toBe(200);
      expect((await api(`/views/${view.id}`, { key: reader })).status).toBe(200);
      const refused = await post('/views', { name: 'No', object: 'deals' }, reader);
      expect(refused.status).toBe(403);
      expect(refused.body.error).toContain('views:write');
      expect((await api('/views', { key: dealsOnly })).status).toBe(403);
      expect((await api(`/deals?view=${view.id}`, { key: dealsOnly })).status).toBe(200);
      expect((await api(`/deals?view=${view.id}`, { key: writer })).status).toBe(403);
      // A view on stakeholders discloses contacts: applying it needs contacts:read, as the filter would.
      const onPeople = await saveView({
        name: 'Has a blocker',
        object: 'deals',
        filter: { field: 'stakeholders.role_type', op: 'eq', value: 'blocker' },
      });
      const hidden = await api(`/deals?view=${onPeople.id}`, { key: dealsOnly });
      expect(hidden.status).toBe(403);
      expect(hidden.body.code).toBe('insufficient_scope');
      expect(hidden.body.error).toMatch(
        new RegExp(
          `^view: saved view ${onPeople.id} \\("Has a blocker"\\) reads records this key may not: filter/field: stakeholders.role_type reads stakeholders, which needs the scope contacts:read`,
        ),
      );
    });

    it('tRPC and MCP: the same views and the same lists by them', async () => {
      const trpc = s.trpc(org);
      const made = await trpc.views.create.mutate({
        name: 'Via tRPC',
        object: 'deals',
        // The test's client has no declaration of the organization's fields: the tree is not typed.
        filter: BIG_EMEA_APAC as never,
        sort: '-value',
      });
      expect(made.data).toMatchObject({ name: 'Via tRPC', object: 'deals', filter: BIG_EMEA_APAC });
      expect(await trpc.views.get.query({ id: made.data.id })).toEqual({ data: made.data });
      const listed = await trpc.deals.list.query({ view: made.data.id });
      expect(listed).toEqual((await api(`/deals?view=${made.data.id}`)).body);
      const dup = await trpc.views.create
        .mutate({ name: 'VIA trpc', object: 'deals' })
        .catch((e: unknown) => e);
      expect(dup).toMatchObject({ status: 409, body: { code: 'conflict', conflicting_id: made.data.id } });

      const mcp = await mcpClient(s.url, org.apiKey);
      try {
        const call = (name: string, args: Row) =>
          mcp.callTool({ name, arguments: args }) as Promise<CallToolResult>;
        const { tools } = await mcp.listTools();
        for (const name of ['views-list', 'views-create', 'views-get', 'views-update', 'views-delete'])
          expect(tools.map((t) => t.name)).toContain(name);
        expect(tools.find((t) => t.name === 'deals-list')?.inputSchema.properties).toHaveProperty('view');
        expect(tools.find((t) => t.name === 'deals-query')?.inputSchema.properties).toHaveProperty('view');
        const created = await call('views-create', {
          name: 'Via MCP',
          object: 'deals',
          filter: { field: 'custom.region', op: 'eq', value: 'amer' },
        });
        expect(created.isError, JSON.stringify(created.content)).toBeFalsy();
        const id = (created.structuredContent as { data: { id: string } }).data.id;
        const byList = await call('deals-list', { view: id, limit: 100 });
        expect(byList.structuredContent).toEqual((await api(`/deals?view=${id}&limit=100`)).body);
        const byQuery = await call('deals-query', { view: id, limit: 100 });
        expect(byQuery.structuredContent).toEqual(byList.structuredContent);
        expect((byList.structuredContent as { data: Row[] }).data.map((d) => d.custom.region)).toEqual(
          Array(4).fill('amer'),
        );
        const bad = await call('views-create', {
          name: 'Bad',
          object: 'deals',
          filter: { field: 'custom.regoin', op: 'eq', value: 'amer' },
        });
        expect(bad.isError).toBe(true);
        expect((bad.content[0] as { text: string }).text).toContain(
          'filter/field: unknown field "custom.regoin"; did you mean "custom.region"?',
        );
        const wrong = await call('contacts-list', { view: id });
        expect(wrong.isError).toBe(true);
        expect((wrong.content[0] as { text: string }).text).toMatch(/^view: .* is a view of deals/);
      } finally {
        await mcp.close();
      }
    });
  },
);
