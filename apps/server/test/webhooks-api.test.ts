import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVERS, ISO, MISSING_ID, startTestServer, type TestServer, UUID } from './harness.ts';

const ALL_EVENTS = [
  'deal.created',
  'deal.updated',
  'deal.stage_changed',
  'deal.won',
  'deal.lost',
  'contact.created',
  'contact.updated',
  'analysis.completed',
];
/** Standard Webhooks: `whsec_` + base64 of at least 24 random bytes. */
const SECRET = /^whsec_[A-Za-z0-9+/]+={0,2}$/;

for (const { driver, label, skip } of DRIVERS) {
  describe.skipIf(skip)(`webhook endpoints (contract rows 18-20) on ${label}`, () => {
    let s: TestServer;
    const target = 'http://127.0.0.1:9/hooks/crm';
    beforeAll(async () => {
      s = await startTestServer(driver, { CRM_WEBHOOKS_ALLOW_PRIVATE: 'true' });
    });
    afterAll(async () => {
      await s?.stop();
    });

    const endpointRows = async () =>
      Number((await s.sql<{ n: unknown }>('select count(*) as n from webhook_endpoints'))[0]?.n);

    it('POST /webhooks answers 201 with exactly id, secret, url and events', async () => {
      const res = await s.api('/webhooks', {
        method: 'POST',
        json: { url: target, events: ['deal.created', 'deal.won'] },
      });
      expect(res.status, res.text).toBe(201);
      expect(res.body).toEqual({
        data: {
          id: expect.stringMatching(UUID),
          secret: expect.stringMatching(SECRET),
          url: target,
          events: ['deal.created', 'deal.won'],
        },
      });
      const key = Buffer.from(res.body.data.secret.slice('whsec_'.length), 'base64');
      expect(key.length).toBeGreaterThanOrEqual(24);
    });

    it('accepts every one of the eight event kinds, and each kind once however often it is listed', async () => {
      const res = await s.api('/webhooks', {
        method: 'POST',
        json: { url: `${target}?all=1`, events: [...ALL_EVENTS, 'deal.created'] },
      });
      expect(res.status, res.text).toBe(201);
      expect(res.body.data.events).toEqual(ALL_EVENTS);
    });

    it('GET /webhooks lists the endpoints, newest first, with the contract’s fields and never a secret', async () => {
      const created = await s.api('/webhooks', {
        method: 'POST',
        json: { url: target, events: ['contact.updated'] },
      });
      const res = await s.api('/webhooks');
      expect(res.status).toBe(200);
      expect(res.body.data[0]).toEqual({
        id: created.body.data.id,
        url: target,
        events: ['contact.updated'],
        is_active: true,
        failure_count: 0,
        last_triggered_at: null,
        created_at: expect.stringMatching(ISO),
      });
      for (const w of res.body.data)
        expect(Object.keys(w).sort()).toEqual(
          ['created_at', 'events', 'failure_count', 'id', 'is_active', 'last_triggered_at', 'url'].sort(),
        );
      expect(res.text).not.toContain('whsec_');
      expect(res.text).not.toContain(created.body.data.secret);
    });

    it.each([
      ['no url', { events: ['deal.created'] }, /^url: Required/],
      [
        'a relative url',
        { url: '/hooks', events: ['deal.created'] },
        /^url: must be an absolute http or https URL/,
      ],
      [
        'an ftp url',
        { url: 'ftp://example.com/x', events: ['deal.created'] },
        /^url: must be an absolute http/,
      ],
      [
        'a url with credentials',
        { url: 'https://u:p@example.com/x', events: ['deal.created'] },
        /^url: must not contain/,
      ],
      ['a url that is not a string', { url: 42, events: ['deal.created'] }, /^url: /],
      // These reached the database, which took the NUL for a broken connection (503), or were stored.
      [
        'a url with a NUL in its path',
        { url: 'https://93.184.216.34/a\u0000b', events: ['deal.created'] },
        /^url: must not contain NUL characters/,
      ],
      [
        'a url with a NUL in its query',
        { url: 'https://93.184.216.34/a?x=\u0000', events: ['deal.created'] },
        /^url: must not contain NUL characters/,
      ],
      [
        'a url with a lone surrogate',
        { url: 'https://93.184.216.34/\ud800', events: ['deal.created'] },
        /^url: must be valid Unicode text/,
      ],
      [
        'a url on port 0',
        { url: 'https://93.184.216.34:0/x', events: ['deal.created'] },
        /^url: must not name port 0/,
      ],
      ['no events', { url: target }, /^events: Required/],
      ['an empty events list', { url: target, events: [] }, /^events: .*>=1/],
      ['an unknown event kind', { url: target, events: ['deal.created', 'deal.deleted'] }, /^events\[1\]: /],
      ['events that are not a list', { url: target, events: 'deal.created' }, /^events: /],
      [
        'an unknown property',
        { url: target, events: ['deal.created'], secret: 'mine' },
        /Unknown property: secret/,
      ],
    ])('refuses %s with a 400 that names the field, and stores nothing', async (_what, json, message) => {
      const before = await endpointRows();
      const res = await s.api('/webhooks', { method: 'POST', json });
      expect(res.status, res.text).toBe(400);
      expect(res.body).toEqual({ error: expect.stringMatching(message), code: 'invalid_request' });
      expect(await endpointRows()).toBe(before);
    });

    it('a filter over the event’s record: stored and shown back only when set, changed by PATCH, a 400 naming the node when it does not fit the kinds', async () => {
      const filter = {
        and: [
          { field: 'value', op: 'gte', value: 50000 },
          { field: 'title', op: 'contains', value: 'big' },
        ],
      };
      const created = await s.api('/webhooks', {
        method: 'POST',
        json: { url: `${target}?filtered=1`, events: ['deal.created', 'deal.updated'], filter },
      });
      expect(created.status, created.text).toBe(201);
      expect(created.body.data).toEqual({
        id: expect.stringMatching(UUID),
        secret: expect.stringMatching(SECRET),
        url: `${target}?filtered=1`,
        events: ['deal.created', 'deal.updated'],
        filter,
      });
      const id = created.body.data.id;
      const listed = async () =>
        (await s.api('/webhooks')).body.data.find((w: { id: string }) => w.id === id) as Record<
          string,
          unknown
        >;
      expect((await listed()).filter).toEqual(filter);
      // Without a filter, the contract's Webhook exactly: no `filter` key at all.
      for (const w of (await s.api('/webhooks')).body.data)
        if (w.id !== id) expect(Object.keys(w)).not.toContain('filter');

      const refused = async (json: Record<string, unknown>, method = 'POST', path = '/webhooks') => {
        const res = await s.api(path, {
          method,
          json: { ...(method === 'POST' ? { url: target } : {}), ...json },
        });
        expect(res.status, res.text).toBe(400);
        return res.body.error as string;
      };
      const before = await endpointRows();
      // A deal's field on contact kinds; a field of neither; an operator the type does not take.
      expect(
        await refused({
          events: ['contact.created', 'contact.updated'],
          filter: { field: 'value', op: 'gte', value: 1 },
        }),
      ).toMatch(/^filter\/field: unknown field "value"/);
      expect(
        await refused({
          events: ['deal.updated'],
          filter: {
            and: [
              { field: 'value', op: 'gte', value: 1 },
              { field: 'valeu', op: 'eq', value: 1 },
            ],
          },
        }),
      ).toBe('filter/and/1/field: unknown field "valeu"; did you mean "value"?');
      expect(
        await refused({ events: ['deal.updated'], filter: { field: 'value', op: 'contains', value: 'x' } }),
      ).toMatch(/^filter\/op: "contains" does not apply to value \(a number field\)/);
      // Kinds of two records: the filter must fit each, and the message says which did not.
      expect(
        await refused({
          events: ['deal.created', 'contact.created'],
          filter: { field: 'value', op: 'gte', value: 1 },
        }),
      ).toMatch(
        /^filter\/field: unknown field "value".*\(in the filter of contact\.created, whose data is a contact\)$/,
      );
      expect(
        await refused({
          events: ['deal.won', 'analysis.completed'],
          filter: { field: 'value', op: 'gte', value: 1 },
        }),
      ).toMatch(/^filter: analysis\.completed \(events\/1\) carries no record a filter reads/);
      // A related record the event's data does not carry.
      expect(
        await refused({
          events: ['deal.updated'],
          filter: { not: { field: 'company.industry', op: 'eq', value: 'x' } },
        }),
      ).toMatch(
        /^filter\/not\/field: company\.industry reads a related record, which the data of deal\.updated, whose data is a deal does not carry/,
      );
      expect(await endpointRows()).toBe(before);
      // Fields two records share fit both.
      const shared = await s.api('/webhooks', {
        method: 'POST',
        json: {
          url: `${target}?shared=1`,
          events: ['deal.created', 'contact.created', 'company.created'],
          filter: { field: 'created_at', op: 'gte', value: '2026-01-01T00:00:00Z' },
        },
      });
      expect(shared.status, shared.text).toBe(201);

      // PATCH: kinds the kept filter does not fit are refused, nothing changed; null removes the filter.
      expect(await refused({ events: ['contact.updated'] }, 'PATCH', `/webhooks/${id}`)).toMatch(
        /^filter\/and\/0\/field: unknown field "value"/,
      );
      expect((await listed()).events).toEqual(['deal.created', 'deal.updated']);
      const changed = await s.api(`/webhooks/${id}`, {
        method: 'PATCH',
        json: { filter: { field: 'stage_type', op: 'eq', value: 'won' } },
      });
      expect(changed.status, changed.text).toBe(200);
      expect(changed.body.data).toMatchObject({
        id,
        events: ['deal.created', 'deal.updated'],
        filter: { field: 'stage_type', op: 'eq', value: 'won' },
      });
      const cleared = await s.api(`/webhooks/${id}`, {
        method: 'PATCH',
        json: { filter: null, events: ['contact.updated'] },
      });
      expect(cleared.status, cleared.text).toBe(200);
      expect(Object.keys(cleared.body.data).sort()).toEqual(
        ['id', 'url', 'events', 'is_active', 'failure_count', 'last_triggered_at', 'created_at'].sort(),
      );
      expect(cleared.body.data.events).toEqual(['contact.updated']);
      expect(
        (await s.api(`/webhooks/${MISSING_ID}`, { method: 'PATCH', json: { events: ['deal.won'] } })).status,
      ).toBe(404);
      for (const w of [id, shared.body.data.id]) await s.api(`/webhooks/${w}`, { method: 'DELETE' });
    });

    it('DELETE /webhooks/{id} answers { success: true }, then 404; the endpoint is gone from the list', async () => {
      const id = (await s.api('/webhooks', { method: 'POST', json: { url: target, events: ['deal.lost'] } }))
        .body.data.id;
      const res = await s.api(`/webhooks/${id}`, { method: 'DELETE' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true });
      const again = await s.api(`/webhooks/${id}`, { method: 'DELETE' });
      expect(again.status).toBe(404);
      expect(again.body).toEqual({ error: 'Webhook not found', code: 'not_found' });
      const list = await s.api('/webhooks');
      expect(list.body.data.map((w: { id: string }) => w.id)).not.toContain(id);
    });

    it('a malformed id answers 400 naming it; a missing one 404, on every webhook path', async () => {
      expect((await s.api('/webhooks/not-a-uuid', { method: 'DELETE' })).body).toEqual({
        error: expect.stringMatching(/^id: /),
        code: 'invalid_request',
      });
      const missing = [
        s.api(`/webhooks/${MISSING_ID}`, { method: 'DELETE' }),
        s.api(`/webhooks/${MISSING_ID}/activate`, { method: 'POST' }),
        s.api(`/webhooks/${MISSING_ID}/deliveries`),
        s.api(`/webhooks/${MISSING_ID}/deliveries/${MISSING_ID}/replay`, { method: 'POST' }),
      ];
      for (const res of await Promise.all(missing)) {
        expect(res.status, res.text).toBe(404);
        expect(res.body).toEqual({ error: 'Webhook not found', code: 'not_found' });
      }
      const id = (await s.api('/webhooks', { method: 'POST', json: { url: target, events: ['deal.lost'] } }))
        .body.data.id;
      const replay = await s.api(`/webhooks/${id}/deliveries/${MISSING_ID}/replay`, { method: 'POST' });
      expect(replay.status).toBe(404);
      expect(replay.body).toEqual({ error: 'Delivery not found', code: 'not_found' });
      const bad = await s.api(`/webhooks/${id}/deliveries/nope/replay`, { method: 'POST' });
      expect(bad.body.error).toMatch(/^delivery_id: /);
    });

    it('GET /webhooks/{id}/deliveries starts empty, with pagination meta; status filters are checked', async () => {
      const id = (await s.api('/webhooks', { method: 'POST', json: { url: target, events: ['deal.lost'] } }))
        .body.data.id;
      const res = await s.api(`/webhooks/${id}/deliveries?limit=10`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: [], meta: { total: 0, limit: 10, offset: 0 } });
      const bad = await s.api(`/webhooks/${id}/deliveries?status=lost`);
      expect(bad.status).toBe(400);
      expect(bad.body.error).toMatch(/^status: /);
    });

    it('POST /webhooks/{id}/activate on an active endpoint answers it unchanged', async () => {
      const id = (await s.api('/webhooks', { method: 'POST', json: { url: target, events: ['deal.lost'] } }))
        .body.data.id;
      const res = await s.api(`/webhooks/${id}/activate`, { method: 'POST' });
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({ id, is_active: true, failure_count: 0 });
    });

    it('works through the typed REST and tRPC clients', async () => {
      const rest = s.rest(s.orgB);
      const created = await rest.POST('/webhooks', { body: { url: target, events: ['contact.created'] } });
      expect(created.response.status).toBe(201);
      const id = created.data?.data.id as string;
      expect(created.data?.data.secret).toMatch(SECRET);
      const trpc = s.trpc(s.orgB);
      const listed = await trpc.webhooks.list.query();
      expect(listed.data.map((w) => w.id)).toEqual([id]);
      const deliveries = await rest.GET('/webhooks/{id}/deliveries', { params: { path: { id } } });
      expect(deliveries.data?.meta.total).toBe(0);
      expect(await trpc.webhooks.delete.mutate({ id })).toEqual({ success: true });
      expect((await trpc.webhooks.list.query()).data).toEqual([]);
    });

    it('the OpenAPI document has the three contract operations and the four extra ones', async () => {
      const doc = (await (await fetch(`${s.base}/openapi.json`)).json()) as {
        paths: Record<string, Record<string, { responses: Record<string, unknown>; parameters?: unknown[] }>>;
      };
      const ops = Object.entries(doc.paths)
        .filter(([p]) => p.startsWith('/webhooks'))
        .flatMap(([p, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${p}`))
        .sort();
      expect(ops).toEqual(
        [
          'GET /webhooks',
          'POST /webhooks',
          'DELETE /webhooks/{id}',
          'PATCH /webhooks/{id}',
          'POST /webhooks/{id}/activate',
          'GET /webhooks/{id}/deliveries',
          'POST /webhooks/{id}/deliveries/{delivery_id}/replay',
        ].sort(),
      );
      expect(Object.keys(doc.paths['/webhooks']?.post?.responses ?? {})).toContain('201');
      expect(Object.keys(doc.paths['/webhooks/{id}']?.delete?.responses ?? {})).toContain('404');
      const replay = doc.paths['/webhooks/{id}/deliveries/{delivery_id}/replay']?.post;
      expect(Object.keys(replay?.responses ?? {})).toEqual(expect.arrayContaining(['202', '404', '409']));
      // A create that returns a secret does not take Idempotency-Key (its stored response would keep the secret).
      expect(JSON.stringify(doc.paths['/webhooks']?.post?.parameters ?? [])).not.toContain('Idempotency-Key');
    });
  });
}
