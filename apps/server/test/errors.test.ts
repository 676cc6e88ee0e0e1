import { gzipSync } from 'node:zlib';
import { issueApiKey, orgFork, revokeApiKey } from '@crm/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiResponse, DRIVERS, MISSING_ID, startTestServer, type TestServer } from './harness.ts';

type Json = Record<string, unknown>;

/** The contract's error body: exactly `{ error, code }`, JSON, with the given status and code. */
function expectError(res: ApiResponse, status: number, code: string, field?: string) {
  expect(res.status, res.text).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(Object.keys(res.body ?? {}).sort(), res.text).toEqual(['code', 'error']);
  expect(typeof res.body.error).toBe('string');
  expect(res.body.code).toBe(code);
  if (field) expect(res.body.error).toMatch(new RegExp(`(^|[^\\w])${field}([^\\w]|$)`));
}

for (const { driver, label, skip } of DRIVERS) {
  describe.skipIf(skip)(`errors on ${label}`, () => {
    let s: TestServer;
    const statuses: Array<{ request: string; status: number }> = [];

    beforeAll(async () => {
      s = await startTestServer(driver);
    });
    afterAll(async () => {
      await s?.stop();
    });

    /** Like `s.api`, and remembers every status so the last test can check that none was a 500. */
    async function api(path: string, init: Parameters<TestServer['api']>[1] = {}): Promise<ApiResponse> {
      const res = await s.api(path, init);
      statuses.push({ request: `${init.method ?? 'GET'} ${path}`, status: res.status });
      return res;
    }

    /** Sends `body` as it is, with the given Content-Type (JSON by default). */
    function raw(path: string, method: string, body: string, contentType = 'application/json') {
      return api(path, { method, body, headers: { 'content-type': contentType } });
    }

    async function count(query: string, params: unknown[] = []): Promise<number> {
      const [row] = await s.sql<{ n: unknown }>(`select count(*) as n from ${query}`, params);
      return Number(row?.n);
    }

    const totals = async () => ({
      deals: await count('deals'),
      contacts: await count('contacts'),
      activities: await count('activities'),
    });

    async function createDeal(json: Json): Promise<Json & { id: string }> {
      const res = await api('/deals', { method: 'POST', json });
      expect(res.status).toBe(201);
      return res.body.data;
    }

    async function createContact(json: Json): Promise<Json & { id: string }> {
      const res = await api('/contacts', { method: 'POST', json });
      expect(res.status).toBe(201);
      return res.body.data;
    }

    /** The deal's stored row and its number of activities: what a failed PATCH must leave alone. */
    async function dealState(id: string) {
      const [row] = await s.sql('select * from deals where id = ?', [id]);
      return { row, activities: await count('activities where deal_id = ?', [id]) };
    }

    async function contactState(id: string) {
      const [row] = await s.sql<{ deal_id: string }>('select * from contacts where id = ?', [id]);
      return { row, activities: await count('activities where deal_id = ?', [row?.deal_id]) };
    }

    describe('POST /deals with an invalid body answers 400 naming the field and stores nothing', () => {
      const cases: Array<[string, unknown, string]> = [
        ['an unknown property', { title: 'Bad unknown', colour: 'red' }, 'colour'],
        ['no title', { company_name: 'Bad missing title' }, 'title'],
        ['an empty title', { title: '' }, 'title'],
        ['a whitespace-only title', { title: '   ' }, 'title'],
        ['a title that is a number', { title: 5 }, 'title'],
        ['a value that is a string', { title: 'Bad value', value: 'abc' }, 'value'],
        ['a bad contact_email', { title: 'Bad email', contact_email: 'not-an-email' }, 'contact_email'],
        ['a stage_id that is not a uuid', { title: 'Bad stage', stage_id: '123' }, 'stage_id'],
        ['a pipeline_id that is not a uuid', { title: 'Bad pipeline', pipeline_id: '123' }, 'pipeline_id'],
        [
          'an expected_close_date of "tomorrow"',
          { title: 'Bad date 1', expected_close_date: 'tomorrow' },
          'expected_close_date',
        ],
        [
          'an expected_close_date in month 13',
          { title: 'Bad date 2', expected_close_date: '2026-13-01T00:00:00Z' },
          'expected_close_date',
        ],
      ];
      for (const [what, json, field] of cases) {
        it(`${what} answers 400 naming ${field}`, async () => {
          const before = await totals();
          const res = await api('/deals', { method: 'POST', json });
          expectError(res, 400, 'invalid_request', field);
          expect(await totals()).toEqual(before);
          const title = (json as Json).title;
          if (typeof title === 'string') expect(await count('deals where title = ?', [title])).toBe(0);
        });
      }

      it('a date-time that is no date-time is named as such, not as out of range', async () => {
        for (const expected_close_date of ['2026-12-01T23:59:60Z', 'tomorrow']) {
          const res = await api('/deals', { method: 'POST', json: { title: 'Leap', expected_close_date } });
          expectError(res, 400, 'invalid_request', 'expected_close_date');
          expect(res.body.error).not.toMatch(/years/);
        }
        const far = await api('/deals', {
          method: 'POST',
          json: { title: 'Far', expected_close_date: '0999-12-31T00:00:00Z' },
        });
        expect(far.body.error).toMatch(/expected_close_date: must be between the years 1000 and 9999/);
      });

      it('a value takes any amount with up to two decimals, and refuses a third', async () => {
        // Large amounts whose cents a binary multiplication by 100 gets wrong were once refused.
        for (const value of [
          2614969103.8, 8888888888.88, 601250909907.58, 0.07, 1.1, 999999999999.99, 1e15,
        ]) {
          const created = await api('/deals', { method: 'POST', json: { title: `Amount ${value}`, value } });
          expect(created.status, String(value)).toBe(201);
          expect(created.body.data.value).toBe(value);
          const patched = await api(`/deals/${created.body.data.id}`, { method: 'PATCH', json: { value } });
          expect(patched.status, String(value)).toBe(200);
          expect((await api(`/deals/${created.body.data.id}`)).body.data.deal.value).toBe(value);
        }
        for (const value of [1.005, 0.001, 2614969103.801, 5e-324, 1e-7]) {
          const res = await api('/deals', { method: 'POST', json: { title: `Too precise ${value}`, value } });
          expectError(res, 400, 'invalid_request', 'value: at most 2 decimal places');
        }
      });

      it('a value that is a numeric string, a boolean, an empty string or an array is refused, not converted', async () => {
        for (const value of ['100', true, '', [7]]) {
          const title = `Coerced ${JSON.stringify(value)}`;
          const created = await api('/deals', { method: 'POST', json: { title, value } });
          expectError(created, 400, 'invalid_request', 'value');
          expect(await count('deals where title = ?', [title])).toBe(0);
        }
        const deal = await createDeal({ title: 'Coerce on PATCH', value: 5 });
        for (const value of ['100', true, '', [7]]) {
          const patched = await api(`/deals/${deal.id}`, { method: 'PATCH', json: { value } });
          expectError(patched, 400, 'invalid_request', 'value');
        }
        expect((await api(`/deals/${deal.id}`)).body.data.deal.value).toBe(5);
        // The same through tRPC, after REST calls (the schema is shared, and stays as written).
        const trpc = s.trpc(s.orgA);
        await expect(
          trpc.deals.create.mutate({ title: 'tRPC coerced', value: '100' as unknown as number }),
        ).rejects.toThrow(/value/);
      });

      it('a wrong type says what was expected and what came, not "Required"', async () => {
        const cases: Array<[string, RequestInit & { json?: unknown }, string]> = [
          ['/deals', { method: 'POST', json: { title: 12 } }, 'title: expected string, got number'],
          [
            '/deals',
            { method: 'POST', json: { title: 'Notes', notes: [] } },
            'notes: expected string, got array',
          ],
          ['/deals?limit=abc', {}, 'limit: expected a decimal integer, got "abc"'],
          ['/deals?limit=10.5', {}, 'limit: expected a decimal integer, got "10.5"'],
          ['/deals', { method: 'POST', json: { company_name: 'No title' } }, 'title: Required'],
        ];
        for (const [path, init, message] of cases) {
          const res = await api(path, init);
          expectError(res, 400, 'invalid_request');
          expect(res.body.error, path).toContain(message);
        }
      });

      it('an integer query parameter is decimal digits only, or a 400 saying what came', async () => {
        for (const [path, message] of [
          ['/deals?limit=0x10', 'limit: expected a decimal integer, got "0x10"'],
          ['/deals?limit=1e2', 'limit: expected a decimal integer, got "1e2"'],
          ['/deals?limit=', 'limit: expected a decimal integer, got ""'],
          ['/deals?limit=%2B5', 'limit: expected a decimal integer, got "+5"'],
          ['/contacts?offset=0x1', 'offset: expected a decimal integer, got "0x1"'],
          ['/events?limit=1e2', 'limit: expected a decimal integer, got "1e2"'],
        ]) {
          const res = await api(path as string);
          expectError(res, 400, 'invalid_request');
          expect(res.body.error, path).toBe(message);
        }
        expect((await api('/deals?limit=007&offset=0')).body.meta).toMatchObject({ limit: 7, offset: 0 });
        // tRPC sends JSON numbers for the same inputs: checked as they are, as before.
        const trpc = s.trpc(s.orgA);
        expect((await trpc.deals.list.query({ limit: 3 })).meta.limit).toBe(3);
        await expect(trpc.deals.list.query({ limit: 10.5 })).rejects.toThrow(
          'limit: expected int, got number',
        );
      });

      it('an empty body with Content-Type application/json answers 400 naming title', async () => {
        const before = await totals();
        const res = await raw('/deals', 'POST', '');
        expectError(res, 400, 'invalid_request', 'title');
        expect(await totals()).toEqual(before);
      });
    });

    describe('PATCH /deals/{id} with an invalid body answers 400 naming the field and changes nothing', () => {
      const cases: Array<[string, unknown, string]> = [
        ['an unknown property', { colour: 'red' }, 'colour'],
        ['an id in the body', { id: MISSING_ID, title: 'Moved' }, 'id'],
        ['an empty title', { title: '' }, 'title'],
        ['a whitespace-only title', { title: '  \t ' }, 'title'],
        ['a null title', { title: null }, 'title'],
        ['a title that is a number', { title: 5 }, 'title'],
        ['a value that is a string', { value: 'abc' }, 'value'],
        ['a bad contact_email', { contact_email: 'nope@' }, 'contact_email'],
        ['a stage_id that is not a uuid', { stage_id: '123' }, 'stage_id'],
        ['an expected_close_date of "tomorrow"', { expected_close_date: 'tomorrow' }, 'expected_close_date'],
        [
          'an expected_close_date in month 13',
          { expected_close_date: '2026-13-01T00:00:00Z' },
          'expected_close_date',
        ],
        ['an empty lifecycle_stage', { lifecycle_stage: '   ' }, 'lifecycle_stage'],
        ['a lifecycle_stage over 64 characters', { lifecycle_stage: 'x'.repeat(65) }, 'lifecycle_stage'],
      ];
      for (const [what, json, field] of cases) {
        it(`${what} answers 400 naming ${field}`, async () => {
          const deal = await createDeal({ title: `Patch target ${what}`, value: 100 });
          const before = await dealState(deal.id);
          const res = await api(`/deals/${deal.id}`, { method: 'PATCH', json });
          expectError(res, 400, 'invalid_request', field);
          expect(await dealState(deal.id)).toEqual(before);
        });
      }

      it('one invalid field among valid ones changes nothing and records no activity', async () => {
        const deal = await createDeal({ title: 'Half valid', value: 100, notes: 'before' });
        const before = await dealState(deal.id);
        const res = await api(`/deals/${deal.id}`, {
          method: 'PATCH',
          json: { title: 'Renamed', value: 999, notes: 'after', contact_email: 'not-an-email' },
        });
        expectError(res, 400, 'invalid_request', 'contact_email');
        expect(res.body.error).not.toMatch(/\b(title|value|notes)\b/);
        expect(await dealState(deal.id)).toEqual(before);
        const shown = await api(`/deals/${deal.id}`);
        expect(shown.body.data.deal).toMatchObject({
          title: 'Half valid',
          value: 100,
          notes: 'before',
          updated_at: null,
        });
        expect(shown.body.data.recent_activities.map((a: { type: string }) => a.type)).toEqual([
          'deal_created',
        ]);
      });

      it('a valid stage_id that does not exist answers 400 naming stage_id and changes nothing', async () => {
        const deal = await createDeal({ title: 'Stage guard', value: 1 });
        const before = await dealState(deal.id);
        const res = await api(`/deals/${deal.id}`, {
          method: 'PATCH',
          json: { value: 2, stage_id: MISSING_ID },
        });
        expectError(res, 400, 'invalid_request', 'stage_id');
        expect(await dealState(deal.id)).toEqual(before);
      });
    });

    describe('POST /contacts with an invalid body answers 400 naming the field and stores nothing', () => {
      let dealId: string;
      beforeAll(async () => {
        dealId = (await createDeal({ title: 'Contacts home' })).id;
      });

      const cases: Array<[string, (dealId: string) => unknown, string]> = [
        ['an unknown property', (d) => ({ name: 'Bad', deal_id: d, age: 3 }), 'age'],
        ['no name', (d) => ({ deal_id: d }), 'name'],
        ['an empty name', (d) => ({ name: '', deal_id: d }), 'name'],
        ['a whitespace-only name', (d) => ({ name: '   ', deal_id: d }), 'name'],
        ['no deal_id', () => ({ name: 'Orphan' }), 'deal_id'],
        ['a deal_id that is not a uuid', () => ({ name: 'Orphan', deal_id: '123' }), 'deal_id'],
        ['a bad email', (d) => ({ name: 'Bad', deal_id: d, email: 'at-nowhere' }), 'email'],
        ['an unknown role_type', (d) => ({ name: 'Bad', deal_id: d, role_type: 'boss' }), 'role_type'],
      ];
      for (const [what, json, field] of cases) {
        it(`${what} answers 400 naming ${field}`, async () => {
          const before = await totals();
          const res = await api('/contacts', { method: 'POST', json: json(dealId) });
          expectError(res, 400, 'invalid_request', field);
          expect(await totals()).toEqual(before);
          expect(await count('contacts where deal_id = ?', [dealId])).toBe(0);
        });
      }

      it('a deal_id of a missing deal answers 404 and stores nothing', async () => {
        const before = await totals();
        const res = await api('/contacts', { method: 'POST', json: { name: 'Lost', deal_id: MISSING_ID } });
        expectError(res, 404, 'not_found');
        expect(await totals()).toEqual(before);
      });
    });

    describe('PATCH /contacts/{id} with an invalid body answers 400 naming the field and changes nothing', () => {
      let contactId: string;
      beforeAll(async () => {
        const deal = await createDeal({ title: 'Contact patch home' });
        contactId = (await createContact({ name: 'Pat', deal_id: deal.id, email: 'pat@example.com' })).id;
      });

      const cases: Array<[string, unknown, string]> = [
        ['an unknown property', { colour: 'red' }, 'colour'],
        ['a deal_id (not updatable)', { deal_id: MISSING_ID }, 'deal_id'],
        ['an id in the body', { id: MISSING_ID, name: 'Moved' }, 'id'],
        ['an empty name', { name: '' }, 'name'],
        ['a bad email', { email: 'pat@' }, 'email'],
        ['a linkedin_url that is not a url', { linkedin_url: 'not a url' }, 'linkedin_url'],
        ['an unknown role_type', { role_type: 'boss' }, 'role_type'],
        ['an unknown sentiment', { sentiment: 'meh' }, 'sentiment'],
        ['an unknown influence_level', { influence_level: 'huge' }, 'influence_level'],
        ['an unknown engagement_level', { engagement_level: 'x' }, 'engagement_level'],
        [
          'valid fields next to a bad sentiment',
          { name: 'Renamed', notes: 'hi', sentiment: 'meh' },
          'sentiment',
        ],
      ];
      for (const [what, json, field] of cases) {
        it(`${what} answers 400 naming ${field}`, async () => {
          const before = await contactState(contactId);
          const res = await api(`/contacts/${contactId}`, { method: 'PATCH', json });
          expectError(res, 400, 'invalid_request', field);
          expect(await contactState(contactId)).toEqual(before);
        });
      }
    });

    describe('text and dates the database cannot store answer 400, not 500', () => {
      it('a NUL character in a deal title answers 400 naming title and stores nothing', async () => {
        const before = await totals();
        const res = await api('/deals', { method: 'POST', json: { title: 'Nul\u0000title' } });
        expectError(res, 400, 'invalid_request', 'title');
        expect(await totals()).toEqual(before);
      });

      it('a NUL character in a PATCH of a deal answers 400 naming notes and changes nothing', async () => {
        const deal = await createDeal({ title: 'Nul patch' });
        const before = await dealState(deal.id);
        const res = await api(`/deals/${deal.id}`, {
          method: 'PATCH',
          json: { title: 'Fine', notes: 'bad\u0000notes' },
        });
        expectError(res, 400, 'invalid_request', 'notes');
        expect(await dealState(deal.id)).toEqual(before);
      });

      it('a lone surrogate answers 400 naming the field, so no write answers text a read would not return', async () => {
        const before = await totals();
        const created = await raw('/deals', 'POST', '{"title": "Broken \\ud800 text"}');
        expectError(created, 400, 'invalid_request', 'title');
        expect(created.body.error).toContain('lone surrogate');
        expect(await totals()).toEqual(before);
        const deal = await createDeal({ title: 'Surrogate patch' });
        const patched = await raw(`/deals/${deal.id}`, 'PATCH', '{"notes": "\\udc00"}');
        expectError(patched, 400, 'invalid_request', 'notes');
        // A proper pair (an emoji) is text like any other, and reads back as it was written.
        const emoji = await createDeal({ title: 'Rocket \u{1F680}' });
        expect((await api(`/deals/${emoji.id}`)).body.data.deal.title).toBe('Rocket \u{1F680}');
      });

      it('a NUL character in a contact name answers 400 naming name and stores nothing', async () => {
        const deal = await createDeal({ title: 'Nul contact home' });
        const before = await totals();
        const res = await api('/contacts', { method: 'POST', json: { name: 'Nul\u0000', deal_id: deal.id } });
        expectError(res, 400, 'invalid_request', 'name');
        expect(await totals()).toEqual(before);
      });

      for (const path of ['/search?q=ab%00', '/contacts?q=ab%00']) {
        it(`GET ${path} (a NUL character in q) is answered without a 500`, async () => {
          const res = await api(path);
          expect([200, 400], res.text).toContain(res.status);
          if (res.status === 400) expectError(res, 400, 'invalid_request', 'q');
        });
      }

      for (const date of ['0000-01-01T00:00:00Z', '9999-12-31T23:59:59-14:00']) {
        it(`an expected_close_date of ${date} answers 400 naming it on POST and PATCH`, async () => {
          const before = await totals();
          const created = await api('/deals', {
            method: 'POST',
            json: { title: `Date ${date}`, expected_close_date: date },
          });
          expectError(created, 400, 'invalid_request', 'expected_close_date');
          expect(await totals()).toEqual(before);

          const deal = await createDeal({ title: `Date patch ${date}`, value: 1 });
          const state = await dealState(deal.id);
          const patched = await api(`/deals/${deal.id}`, {
            method: 'PATCH',
            json: { value: 2, expected_close_date: date },
          });
          expectError(patched, 400, 'invalid_request', 'expected_close_date');
          expect(await dealState(deal.id)).toEqual(state);
        });
      }

      it('a value with sub-cent digits is answered as it is stored', async () => {
        const res = await api('/deals', { method: 'POST', json: { title: 'Sub-cent', value: 0.005 } });
        if (res.status === 400) return expectError(res, 400, 'invalid_request', 'value');
        expect(res.status).toBe(201);
        const shown = await api(`/deals/${res.body.data.id}`);
        expect(shown.body.data.deal.value).toBe(res.body.data.value);
      });
    });

    describe('bad query parameters answer 400 naming the parameter', () => {
      const cases: Array<[string, string]> = [
        ['/deals?limit=0', 'limit'],
        ['/deals?limit=101', 'limit'],
        ['/deals?limit=abc', 'limit'],
        ['/deals?limit=1.5', 'limit'],
        ['/deals?offset=-1', 'offset'],
        ['/deals?offset=abc', 'offset'],
        ['/deals?lifecycle_stage=', 'lifecycle_stage'],
        ['/deals?pipeline_id=123', 'pipeline_id'],
        ['/deals?view=123', 'view'],
        ['/deals?view=0195f3a2-7c1e-7b3a-9f10-2d4e6a8c0b12', 'view'],
        ['/views?object=leads', 'object'],
        ['/contacts?limit=0', 'limit'],
        ['/contacts?limit=101', 'limit'],
        ['/contacts?limit=abc', 'limit'],
        ['/contacts?offset=-1', 'offset'],
        ['/search', 'q'],
        ['/search?q=', 'q'],
        ['/search?q=a', 'q'],
        ['/search?q=%20%20a%20%20', 'q'],
        ['/deals?limit=1&limit=2', 'limit'],
        ['/search?q=ab&q=cd', 'q'],
      ];
      for (const [path, field] of cases) {
        it(`GET ${path} answers 400 naming ${field}`, async () => {
          expectError(await api(path), 400, 'invalid_request', field);
        });
      }

      it('an unknown query parameter answers 400 naming it, on every kind of route', async () => {
        const deal = await createDeal({ title: 'Query check' });
        for (const [method, path, name] of [
          ['GET', '/deals?limt=1', 'limt'],
          ['GET', '/contacts?q=a&order=name', 'order'],
          ['GET', '/search?q=acme&type=deal', 'type'],
          ['GET', `/deals/${deal.id}?expand=contacts`, 'expand'],
          ['GET', '/pipeline/stages?all=1', 'all'],
          ['GET', '/usage?month=2026-10', 'month'],
          ['POST', '/deals?dry_run=1', 'dry_run'],
          ['DELETE', `/deals/${deal.id}?force=true`, 'force'],
        ] as const) {
          const res = await api(path, {
            method,
            ...(method === 'POST' ? { json: { title: 'Not stored' } } : {}),
          });
          expectError(res, 400, 'invalid_request');
          expect(res.body.error).toContain(`Unknown query parameter: ${name}`);
        }
        expect(await count('deals where title = ?', ['Not stored'])).toBe(0);
        expect((await api(`/deals/${deal.id}`)).status).toBe(200);
      });

      it('a malformed percent-encoding anywhere in the query string answers 400 naming the parameter', async () => {
        for (const [path, message] of [
          ['/contacts?q=%E0%A4%A', 'q: malformed percent-encoding in "%E0%A4%A"'],
          ['/search?q=ab%E0%A4%A', 'q: malformed percent-encoding in "ab%E0%A4%A"'],
          ['/deals?offset=0&limit=5%', 'limit: malformed percent-encoding in "5%"'],
          ['/deals?li%E0mit=5', "li%E0mit: malformed percent-encoding in a query parameter's name"],
          [`/deals/${MISSING_ID}?x=%FF`, 'x: malformed percent-encoding in "%FF"'],
        ]) {
          const res = await api(path as string);
          expectError(res, 400, 'invalid_request');
          expect(res.body.error, path).toBe(message);
        }
        // Percent-encoded UTF-8 (and + for a space) is read as before.
        const deal = await createDeal({ title: 'Café crème' });
        const found = await api('/search?q=caf%C3%A9+cr%C3%A8me');
        expect(found.body.data.deals.map((d: Json) => d.id)).toEqual([deal.id]);
      });

      it('the limits themselves (1 and 100) and offset 0 are accepted', async () => {
        for (const path of ['/deals?limit=1', '/deals?limit=100&offset=0', '/contacts?limit=100']) {
          expect((await api(path)).status).toBe(200);
        }
      });
    });

    describe('bodies that are not a JSON object', () => {
      it('malformed JSON answers 400 invalid_json and stores nothing', async () => {
        const before = await totals();
        expectError(await raw('/deals', 'POST', '{"title":'), 400, 'invalid_json');
        expect(await totals()).toEqual(before);
      });

      it('malformed JSON on PATCH answers 400 invalid_json and changes nothing', async () => {
        const deal = await createDeal({ title: 'Malformed patch' });
        const before = await dealState(deal.id);
        expectError(await raw(`/deals/${deal.id}`, 'PATCH', '{"title": "x",}'), 400, 'invalid_json');
        expect(await dealState(deal.id)).toEqual(before);
      });

      for (const body of ['[1,2]', '[]', '"str"', '42', 'null', 'true']) {
        it(`the JSON value ${body} as a body answers 400 and stores nothing`, async () => {
          const before = await totals();
          const res = await raw('/deals', 'POST', body);
          // Valid JSON, so not "not valid JSON": what is wrong is that it is no object.
          expectError(res, 400, 'invalid_request');
          expect(res.body.error).toMatch(/must be a JSON object/);
          expect(await totals()).toEqual(before);
        });
      }

      it('a body its Content-Encoding misdescribes answers 400 naming the encoding, on REST and MCP', async () => {
        const before = await totals();
        const truncated = gzipSync('{"title":"Truncated gzip body, not stored"}').subarray(0, 20);
        const bodies: Array<[string, Uint8Array]> = [
          ['gzip', new TextEncoder().encode('{"title":"Plain body said gzip"}')],
          ['deflate', new TextEncoder().encode('{"title":"Plain body said deflate"}')],
          ['br', new TextEncoder().encode('{"title":"Plain body said br"}')],
          ['gzip', truncated],
        ];
        for (const [encoding, body] of bodies) {
          for (const path of [`${s.base}/deals`, `${s.url}/mcp`]) {
            const res = await api(path, {
              method: 'POST',
              body,
              headers: {
                'content-type': 'application/json',
                'content-encoding': encoding,
                accept: 'application/json, text/event-stream',
              },
            });
            expectError(res, 400, 'invalid_request');
            expect(res.body.error).toMatch(/could not be decoded as its Content-Encoding says/);
          }
        }
        // A body that is what it says is read as usual.
        const gzipped = await api('/deals', {
          method: 'POST',
          body: gzipSync('{"title":"Gzipped body, stored"}'),
          headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
        });
        expect(gzipped.status, gzipped.text).toBe(201);
        expect(await totals()).toEqual({
          ...before,
          deals: before.deals + 1,
          activities: before.activities + 1,
        });
      });

      it('Content-Type text/plain with a body answers 415 and stores nothing', async () => {
        const before = await totals();
        const res = await raw('/deals', 'POST', JSON.stringify({ title: 'Plain text' }), 'text/plain');
        expectError(res, 415, 'unsupported_media_type');
        expect(await totals()).toEqual(before);
      });

      it('Content-Type text/plain on PATCH answers 415 and changes nothing', async () => {
        const deal = await createDeal({ title: 'Plain patch' });
        const before = await dealState(deal.id);
        const res = await raw(`/deals/${deal.id}`, 'PATCH', '{"title":"Changed"}', 'text/plain');
        expectError(res, 415, 'unsupported_media_type');
        expect(await dealState(deal.id)).toEqual(before);
      });

      it('Content-Type application/json; charset=utf-8 is accepted (201)', async () => {
        const res = await raw(
          '/deals',
          'POST',
          JSON.stringify({ title: 'Charset ok · ünïcode' }),
          'application/json; charset=utf-8',
        );
        expect(res.status, res.text).toBe(201);
        expect(res.body.data.title).toBe('Charset ok · ünïcode');
      });

      it('a media type in capitals (Application/JSON) is the same media type (201, 200)', async () => {
        for (const type of ['Application/JSON', 'APPLICATION/JSON; Charset=UTF-8']) {
          const res = await raw('/deals', 'POST', JSON.stringify({ title: `Capitals ${type}` }), type);
          expect(res.status, res.text).toBe(201);
          const patched = await raw(`/deals/${res.body.data.id}`, 'PATCH', '{"value":12.5}', type);
          expect(patched.status, patched.text).toBe(200);
          expect(patched.body.data.value).toBe(12.5);
        }
      });

      it('a body over 1 MB answers 413 and stores nothing', async () => {
        const before = await totals();
        const notes = 'x'.repeat(1_200_000);
        const res = await api('/deals', { method: 'POST', json: { title: 'Too big', notes } });
        expectError(res, 413, 'payload_too_large');
        expect(await totals()).toEqual(before);
        expect(await count('deals where title = ?', ['Too big'])).toBe(0);
      });

      it('a body over 1 MB on PATCH answers 413 and changes nothing', async () => {
        const deal = await createDeal({ title: 'Big patch' });
        const before = await dealState(deal.id);
        const res = await api(`/deals/${deal.id}`, {
          method: 'PATCH',
          json: { notes: 'y'.repeat(1_200_000) },
        });
        expectError(res, 413, 'payload_too_large');
        expect(await dealState(deal.id)).toEqual(before);
      });
    });

    describe('operations that take no body', () => {
      it('a body with anything in it, to any POST the document gives no body, answers 400 saying so', async () => {
        const doc = (await api(`${s.base}/openapi.json`)).body as {
          paths: Record<string, Record<string, { requestBody?: unknown }>>;
        };
        const bodiless = Object.entries(doc.paths)
          .filter(([, item]) => item.post && !item.post.requestBody)
          .map(([path]) => path);
        expect(bodiless.sort()).toEqual([
          '/contacts/{id}/erase',
          '/deals/{id}/analyze',
          '/deals/{id}/predict',
          '/webhooks/{id}/activate',
          '/webhooks/{id}/deliveries/{delivery_id}/replay',
        ]);
        const deal = await createDeal({ title: 'Takes no body' });
        for (const template of bodiless)
          for (const body of ['{"force":true}', '[]', '{"id":"x"}']) {
            const path = template.replace('{id}', deal.id).replace('{delivery_id}', MISSING_ID);
            const res = await raw(path, 'POST', body);
            expectError(res, 400, 'invalid_request');
            expect(res.body.error, `${path} ${body}`).toBe(`POST ${template} takes no request body`);
          }
        expect(await count("activities where type = 'deal_analyzed' and deal_id = ?", [deal.id])).toBe(0);
      });

      it('no body, an empty one or {} is accepted as before', async () => {
        const deal = await createDeal({ title: 'No body at all' });
        expect((await api(`/deals/${deal.id}/predict`, { method: 'POST' })).status).toBe(200);
        expect((await raw(`/deals/${deal.id}/predict`, 'POST', '')).status).toBe(200);
        expect((await raw(`/deals/${deal.id}/analyze`, 'POST', '{}')).status).toBe(200);
      });
    });

    describe('ids in the path', () => {
      const malformed: Array<[string, string, Json?]> = [
        ['GET', '/deals/123'],
        ['PATCH', '/deals/123', { title: 'x' }],
        ['DELETE', '/deals/123'],
        ['GET', '/contacts/not-a-uuid'],
        ['PATCH', '/contacts/not-a-uuid', { name: 'x' }],
      ];
      for (const [method, path, json] of malformed) {
        it(`${method} ${path} answers 400 naming id`, async () => {
          expectError(await api(path, { method, json }), 400, 'invalid_request', 'id');
        });
      }

      it('a valid but missing deal id answers 404 not_found on GET, PATCH and DELETE', async () => {
        for (const [method, json] of [
          ['GET', undefined],
          ['PATCH', { title: 'x' }],
          ['DELETE', undefined],
        ] as const) {
          const res = await api(`/deals/${MISSING_ID}`, { method, json });
          expectError(res, 404, 'not_found');
          expect(res.body).toEqual({ error: 'Deal not found', code: 'not_found' });
        }
      });

      it('a valid but missing contact id answers 404 not_found on GET and PATCH', async () => {
        for (const [method, json] of [
          ['GET', undefined],
          ['PATCH', { name: 'x' }],
        ] as const) {
          const res = await api(`/contacts/${MISSING_ID}`, { method, json });
          expectError(res, 404, 'not_found');
          expect(res.body).toEqual({ error: 'Contact not found', code: 'not_found' });
        }
      });
    });

    describe('routing', () => {
      it('an unknown path under /api/v1/crm answers a JSON 404', async () => {
        for (const path of ['/nope', '/deals/x/y/z', '/pipeline', '/deals/']) {
          expectError(await api(path), 404, 'not_found');
        }
      });

      it('a path outside the API, with or without a body, answers the same JSON 404, never a 500', async () => {
        for (const [method, path] of [
          ['GET', '/healthz/'],
          ['GET', '/anything'],
          ['POST', '/anything'],
          ['GET', '/docs/nope'],
          ['DELETE', '/readyz/x'],
          ['GET', '/api/v1'],
        ] as const) {
          const res = await api(`${s.url}${path}`, {
            method,
            ...(method === 'POST' ? { json: { a: 1 } } : {}),
          });
          expectError(res, 404, 'not_found');
          expect(res.body.error).toBe(`No such endpoint: ${method} ${path}`);
        }
      });

      it('a path in the wrong case (/DEALS) answers 404', async () => {
        expectError(await api('/DEALS'), 404, 'not_found');
        expectError(await api(`/Deals/${MISSING_ID}`), 404, 'not_found');
      });

      it('PUT /deals answers a JSON 405 with Allow: GET, HEAD, POST', async () => {
        const res = await api('/deals', { method: 'PUT', json: { title: 'Put' } });
        expectError(res, 405, 'method_not_allowed');
        expect(
          res.headers
            .get('allow')
            ?.split(',')
            .map((m) => m.trim())
            .sort(),
        ).toEqual(['GET', 'HEAD', 'POST']);
        expect(await count('deals where title = ?', ['Put'])).toBe(0);
      });

      it('DELETE /contacts/{id} answers a JSON 405 with Allow: GET, HEAD, PATCH and deletes nothing', async () => {
        const deal = await createDeal({ title: 'Keep contact' });
        const contact = await createContact({ name: 'Kept', deal_id: deal.id });
        const res = await api(`/contacts/${contact.id}`, { method: 'DELETE' });
        expectError(res, 405, 'method_not_allowed');
        expect(
          res.headers
            .get('allow')
            ?.split(',')
            .map((m) => m.trim())
            .sort(),
        ).toEqual(['GET', 'HEAD', 'PATCH']);
        expect((await api(`/contacts/${contact.id}`)).status).toBe(200);
      });
    });

    describe('authentication', () => {
      it('a missing Authorization header answers 401 missing_api_key', async () => {
        const res = await api('/deals', { key: null });
        expectError(res, 401, 'missing_api_key');
        // RFC 6750: a 401 says which scheme to use.
        expect(res.headers.get('www-authenticate')).toBe('Bearer realm="crm"');
      });

      const badKeys: Array<[string, string]> = [
        ['Bearer garbage', 'Bearer garbage'],
        ['a well-formed but unknown key', `Bearer ck_${'a'.repeat(32)}`],
        ['an empty bearer token', 'Bearer '],
        ['a Basic credential', 'Basic dXNlcjpwYXNz'],
      ];
      for (const [what, header] of badKeys) {
        it(`${what} answers 401 invalid_api_key`, async () => {
          const res = await api('/deals', { key: null, headers: { authorization: header } });
          expectError(res, 401, 'invalid_api_key');
          expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm="crm", error="invalid_token"/);
        });
      }

      it('a revoked key answers 401 invalid_api_key', async () => {
        const issued = await issueApiKey(s.running.db.orm.em.fork(), s.orgA.orgId, { name: 'to revoke' });
        expect((await api('/deals', { key: issued.api_key })).status).toBe(200);
        expect(await revokeApiKey(orgFork(s.running.db.orm.em, s.orgA.orgId), issued.key_id)).toMatchObject({
          key_id: issued.key_id,
        });
        expectError(await api('/deals', { key: issued.api_key }), 401, 'invalid_api_key');
        const before = await totals();
        const write = await api('/deals', {
          method: 'POST',
          key: issued.api_key,
          json: { title: 'Revoked' },
        });
        expectError(write, 401, 'invalid_api_key');
        expect(await totals()).toEqual(before);
      });

      it('an invalid body without a key answers 401, not 400', async () => {
        const before = await totals();
        expectError(
          await api('/deals', { method: 'POST', key: null, json: { title: '' } }),
          401,
          'missing_api_key',
        );
        expectError(
          await api('/deals', { method: 'POST', key: null, json: { title: 'x', colour: 'red' } }),
          401,
          'missing_api_key',
        );
        expectError(
          await api('/contacts', { method: 'POST', key: 'garbage', json: { deal_id: '123' } }),
          401,
          'invalid_api_key',
        );
        expect(await totals()).toEqual(before);
      });

      it('a malformed JSON body without a key answers 401, not 400', async () => {
        const res = await api('/deals', {
          method: 'POST',
          key: null,
          body: '{"title":',
          headers: { 'content-type': 'application/json' },
        });
        expectError(res, 401, 'missing_api_key');
      });

      it('an invalid query or path id without a key answers 401, not 400', async () => {
        expectError(await api('/deals?limit=0', { key: null }), 401, 'missing_api_key');
        expectError(await api('/search?q=a', { key: null }), 401, 'missing_api_key');
        expectError(await api('/deals/123', { key: null }), 401, 'missing_api_key');
        expectError(await api(`/deals/${MISSING_ID}`, { key: null }), 401, 'missing_api_key');
      });
    });

    describe('over tRPC (/trpc)', () => {
      const trpcUrl = (procedure: string, input?: unknown) =>
        `${s.url}/trpc/${procedure}${input === undefined ? '' : `?input=${encodeURIComponent(JSON.stringify(input))}`}`;

      it('the HTTP status is the one in the error data: 200, 400, 401, 404', async () => {
        const ok = await api(trpcUrl('deals.list', {}));
        expect(ok.status, 'a successful query').toBe(200);
        const cases: Array<[string, Parameters<TestServer['api']>[1], number, string]> = [
          [trpcUrl('deals.get', { id: '123' }), {}, 400, 'invalid_request'],
          [trpcUrl('deals.list', {}), { key: null }, 401, 'missing_api_key'],
          [trpcUrl('deals.get', { id: MISSING_ID }), {}, 404, 'not_found'],
          [trpcUrl('deals.create'), { method: 'POST', json: { title: '' } }, 400, 'invalid_request'],
        ];
        for (const [url, init, status, code] of cases) {
          const res = await api(url, init);
          expect(res.body.error.data.httpStatus).toBe(status);
          expect(res.body.error.data.body.code).toBe(code);
          expect(res.status, `${init?.method ?? 'GET'} ${url}`).toBe(status);
        }
      });

      it('an unknown key is refused in every input, a query’s as a mutation’s: 400 naming it', async () => {
        const deal = await createDeal({ title: 'tRPC strictness' });
        const cases: Array<[string, Parameters<TestServer['api']>[1]]> = [
          [trpcUrl('deals.list', { limit: 1, bogus: 1 }), {}],
          [trpcUrl('deals.get', { id: deal.id, bogus: 1 }), {}],
          [trpcUrl('contacts.list', { q: 'x', bogus: 1 }), {}],
          [trpcUrl('search.query', { q: 'tRPC', bogus: 1 }), {}],
          [trpcUrl('events.list', { bogus: 1 }), {}],
          [trpcUrl('ai.predict'), { method: 'POST', json: { id: deal.id, bogus: 1 } }],
          [trpcUrl('deals.delete'), { method: 'POST', json: { id: deal.id, bogus: 1 } }],
        ];
        for (const [url, init] of cases) {
          const res = await api(url, init);
          expect(res.status, url).toBe(400);
          expect(res.body.error.data.body).toEqual({
            error: 'Unknown property: bogus',
            code: 'invalid_request',
          });
        }
        expect((await api(`/deals/${deal.id}`)).status, 'the delete was refused').toBe(200);
      });
    });

    it('no request in this file was answered with a 500', () => {
      expect(statuses.filter((r) => r.status >= 500)).toEqual([]);
    });
  });
}
