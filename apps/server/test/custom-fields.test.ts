import { issueApiKey } from '@crm/api';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVERS, startTestServer, type TestOrg, type TestServer, UUID } from './harness.ts';
import { mcpClient } from './mcp-client.ts';

for (const { driver, label, skip } of DRIVERS) {
  describe.skipIf(skip)(`custom fields on ${label}`, () => {
    let s: TestServer;
    let org: TestOrg;
    beforeAll(async () => {
      s = await startTestServer(driver);
    });
    afterAll(async () => {
      await s?.stop();
    });
    // Each test defines its fields in an organization of its own: the rules of one do not reach another.
    const freshOrg = async () => {
      org = await s.newOrg(`custom ${Math.random()}`);
      return org;
    };
    const api = (path: string, init: Parameters<TestServer['api']>[1] = {}) =>
      s.api(path, { key: org.apiKey, ...init });
    const define = async (object: string, field: Record<string, unknown>) => {
      const res = await api(`/custom-fields/${object}`, { method: 'POST', json: field });
      expect(res.status, res.text).toBe(201);
      return res.body.data;
    };
    const createDeal = (json: Record<string, unknown>) => api('/deals', { method: 'POST', json });

    it('defines a field, lists and reads it; the deal carries its value on create, read, list and event', async () => {
      await freshOrg();
      const field = await define('deals', {
        key: 'arr',
        label: 'ARR',
        type: 'currency',
        validation: { min: 0 },
        ai_hint: 'metrics',
      });
      expect(field).toMatchObject({
        object: 'deals',
        key: 'arr',
        label: 'ARR',
        type: 'currency',
        required: false,
        unique: false,
        indexed: false,
        default: null,
        options: [],
        validation: { min: 0 },
        ai_hint: 'metrics',
        archived: false,
      });
      await define('deals', {
        key: 'region',
        type: 'select',
        options: [{ value: 'emea', label: 'EMEA' }, { value: 'apac' }],
      });
      const list = await api('/custom-fields/deals');
      expect(list.body.data.map((f: { key: string }) => f.key)).toEqual(['arr', 'region']);
      expect(list.body.data[1].options).toEqual([
        { value: 'emea', label: 'EMEA', archived: false },
        { value: 'apac', label: 'apac', archived: false },
      ]);
      expect((await api('/custom-fields/deals/arr')).body.data).toEqual(field);

      const created = await createDeal({ title: 'Acme', custom: { arr: 120000, region: 'emea' } });
      expect(created.status, created.text).toBe(201);
      expect(created.body.data.custom).toEqual({ arr: 120000, region: 'emea' });
      const id = created.body.data.id;
      expect((await api(`/deals/${id}`)).body.data.deal.custom).toEqual({ arr: 120000, region: 'emea' });
      const listed = await api('/deals');
      expect(listed.body.data.find((d: { id: string }) => d.id === id).custom).toEqual({
        arr: 120000,
        region: 'emea',
      });
      // A deal made before (or without) custom values answers an empty object.
      expect((await createDeal({ title: 'Plain' })).body.data.custom).toEqual({});
      const events = await api('/events?types=deal.created');
      const event = events.body.data.find((e: { data: { id: string } }) => e.data.id === id);
      expect(event.data.custom).toEqual({ arr: 120000, region: 'emea' });
      // And every search result.
      const searched = (await api('/search?q=acme')).body.data;
      expect(searched.deals.map((d: { id: string; custom: unknown }) => [d.id, d.custom])).toEqual([
        [id, { arr: 120000, region: 'emea' }],
      ]);
    });

    it('refuses a bad value with a 400 naming custom.<key>, writing nothing', async () => {
      await freshOrg();
      await define('deals', { key: 'arr', type: 'number' });
      await define('deals', {
        key: 'region',
        type: 'select',
        options: [{ value: 'emea' }, { value: 'apac' }],
      });
      await define('deals', { key: 'tags', type: 'multi_select', options: [{ value: 'a' }, { value: 'b' }] });
      await define('deals', { key: 'code', type: 'text', validation: { pattern: '^[A-Z]{2}-\\d+$' } });
      const cases: Array<[Record<string, unknown>, RegExp]> = [
        [{ arr: 'lots' }, /^custom\.arr: expected number, got string$/],
        [{ regoin: 'emea' }, /^custom\.regoin: unknown field; did you mean "region"\?/],
        [{ region: 'mars' }, /^custom\.region: must be one of "emea", "apac"$/],
        [{ tags: ['a', 'a'] }, /^custom\.tags: must not repeat a value$/],
        [{ tags: ['c'] }, /^custom\.tags\[0\]: must be one of "a", "b"$/],
        [{ code: 'xx-1' }, /^custom\.code: must match the pattern/],
        [{ arr: 'x'.repeat(10) }, /^custom\.arr/],
      ];
      for (const [custom, message] of cases) {
        const res = await createDeal({ title: 'Bad', custom });
        expect(res.status, JSON.stringify(custom)).toBe(400);
        expect(res.body).toMatchObject({ code: 'invalid_request', error: expect.stringMatching(message) });
      }
      expect((await api('/deals')).body.meta.total).toBe(0);
      // A record's values stay under 32 KB.
      await define('deals', { key: 'blob', type: 'json' });
      const big = await createDeal({ title: 'Big', custom: { blob: 'x'.repeat(33_000) } });
      expect(big.status).toBe(400);
      expect(big.body.error).toMatch(/^custom: the values take \d+ bytes, over the limit of 32768 bytes/);
    });

    it('required fields: a create without one is refused, a default fills it, a PATCH cannot clear it', async () => {
      await freshOrg();
      await define('deals', { key: 'region', type: 'select', required: true, options: [{ value: 'emea' }] });
      await define('deals', { key: 'tier', type: 'text', required: true, default: 'standard' });
      const missing = await createDeal({ title: 'No region' });
      expect(missing.status).toBe(400);
      expect(missing.body.error).toBe('custom.region: Required (a required custom field)');
      const ok = await createDeal({ title: 'Has region', custom: { region: 'emea' } });
      expect(ok.body.data.custom).toEqual({ region: 'emea', tier: 'standard' });
      const cleared = await api(`/deals/${ok.body.data.id}`, {
        method: 'PATCH',
        json: { custom: { region: null } },
      });
      expect(cleared.status).toBe(400);
      expect(cleared.body.error).toBe('custom.region: the field is required and cannot be cleared');
    });

    it('a PATCH changes only the keys sent, null clears one, and the change is an activity and in deal.updated', async () => {
      await freshOrg();
      await define('deals', { key: 'arr', type: 'number' });
      await define('deals', { key: 'renewal', type: 'date' });
      await define('deals', { key: 'champion_email', type: 'email' });
      const deal = (await createDeal({ title: 'Acme', custom: { arr: 1, renewal: '2027-01-31' } })).body.data;
      const res = await api(`/deals/${deal.id}`, {
        method: 'PATCH',
        json: { custom: { arr: 2, renewal: null, champion_email: 'Ann@Acme.IO' } },
      });
      expect(res.status, res.text).toBe(200);
      expect(res.body.data.custom).toEqual({ arr: 2, champion_email: 'ann@acme.io' });
      const detail = (await api(`/deals/${deal.id}`)).body.data;
      const updated = detail.recent_activities.find((a: { type: string }) => a.type === 'deal_updated');
      expect(updated.description).toMatch(/custom\.arr/);
      const events = await api('/events?types=deal.updated');
      const event = events.body.data.find((e: { data: { id: string } }) => e.data.id === deal.id);
      expect(event.changes).toEqual({
        'custom.arr': { from: 1, to: 2 },
        'custom.renewal': { from: '2027-01-31', to: null },
        'custom.champion_email': { from: null, to: 'ann@acme.io' },
      });
      // The same PATCH again changes nothing.
      const again = await api(`/deals/${deal.id}`, { method: 'PATCH', json: { custom: { arr: 2 } } });
      expect(again.body.data.updated_at).toBe(res.body.data.updated_at);
    });

    it('unique fields: a second holder is a 409 naming the holder, also within a batch and between concurrent writers', async () => {
      await freshOrg();
      await define('deals', { key: 'external_id', type: 'text', unique: true });
      const first = (await createDeal({ title: 'One', custom: { external_id: 'SF-1' } })).body.data;
      const second = await createDeal({ title: 'Two', custom: { external_id: 'SF-1' } });
      expect(second.status).toBe(409);
      expect(second.body).toMatchObject({
        code: 'conflict',
        error: `custom.external_id: the value is already held by deal ${first.id} (the field is unique)`,
        conflicting_id: first.id,
      });
      // A PATCH to a held value, too; to a free one it goes through, and frees the old one.
      const other = (await createDeal({ title: 'Three', custom: { external_id: 'SF-3' } })).body.data;
      const taken = await api(`/deals/${other.id}`, {
        method: 'PATCH',
        json: { custom: { external_id: 'SF-1' } },
      });
      expect(taken.status).toBe(409);
      expect(taken.body.conflicting_id).toBe(first.id);
      const moved = await api(`/deals/${first.id}`, {
        method: 'PATCH',
        json: { custom: { external_id: 'SF-9' } },
      });
      expect(moved.status).toBe(200);
      expect((await createDeal({ title: 'Reuses SF-1', custom: { external_id: 'SF-1' } })).status).toBe(201);
      // A deleted deal frees its value.
      expect((await api(`/deals/${other.id}`, { method: 'DELETE' })).status).toBe(200);
      expect((await createDeal({ title: 'Reuses SF-3', custom: { external_id: 'SF-3' } })).status).toBe(201);

      // Within one batch: all or nothing, the duplicate named by its index.
      const before = (await api('/deals')).body.meta.total;
      const batch = await api('/deals/batch', {
        method: 'POST',
        json: {
          items: [
            { title: 'B0', custom: { external_id: 'B-1' } },
            { title: 'B1', custom: { external_id: 'B-2' } },
            { title: 'B2', custom: { external_id: 'B-1' } },
          ],
        },
      });
      expect(batch.status).toBe(409);
      expect(batch.body.error).toBe(
        'items[2].custom.external_id: the value is already held by items[0] of this batch (the field is unique)',
      );
      expect((await api('/deals')).body.meta.total).toBe(before);

      // Concurrent writers of one value: exactly one wins.
      const racers = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          createDeal({ title: `Racer ${i}`, custom: { external_id: 'RACE' } }),
        ),
      );
      expect(racers.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
      const rows = await s.sql<{ n: string }>(
        `select count(*) as n from deals where org_id = ? and custom ->> 'external_id' = 'RACE'`,
        [org.orgId],
      );
      expect(Number(rows[0]?.n)).toBe(1);
    });

    it('a batch upserts on a unique field: held values update their deal, the others are created; said per item', async () => {
      await freshOrg();
      await define('deals', { key: 'external_id', type: 'text', unique: true });
      await define('deals', { key: 'arr', type: 'number' });
      const held = (await createDeal({ title: 'Old title', custom: { external_id: 'SF-1', arr: 1 } })).body
        .data;
      const res = await api('/deals/batch?upsert_on=external_id', {
        method: 'POST',
        json: {
          items: [
            { title: 'New title', custom: { external_id: 'SF-1', arr: 2 } },
            { title: 'Brand new', custom: { external_id: 'SF-2' } },
            { title: 'No external id' },
          ],
        },
      });
      expect(res.status, res.text).toBe(201);
      expect(res.body.meta).toEqual({
        upserted_on: 'external_id',
        results: ['updated', 'created', 'created'],
      });
      expect(res.body.data[0]).toMatchObject({
        id: held.id,
        title: 'New title',
        custom: { external_id: 'SF-1', arr: 2 },
      });
      expect(res.body.data[1].custom).toEqual({ external_id: 'SF-2' });
      expect((await api('/deals')).body.meta.total).toBe(3);
      const updated = await api('/events?types=deal.updated');
      expect(updated.body.data.map((e: { data: { id: string } }) => e.data.id)).toEqual([held.id]);

      // The field must be a unique one; the parameter goes in the query, not the body.
      const notUnique = await api('/deals/batch?upsert_on=arr', {
        method: 'POST',
        json: { items: [{ title: 'x' }] },
      });
      expect(notUnique.status).toBe(400);
      expect(notUnique.body.error).toBe(
        'upsert_on: "arr" is not a unique custom field of deals (its unique fields: external_id)',
      );
      const inBody = await api('/deals/batch', {
        method: 'POST',
        json: { items: [{ title: 'x' }], upsert_on: 'external_id' },
      });
      expect(inBody.status).toBe(400);
      // tRPC takes it as an input field.
      const viaTrpc = await s.trpc(org).deals.batch.mutate({
        upsert_on: 'external_id',
        items: [{ title: 'Via tRPC', custom: { external_id: 'SF-2' } }],
      });
      expect(viaTrpc.meta?.results).toEqual(['updated']);
      expect(viaTrpc.data[0]?.id).toBe(res.body.data[1].id);
      // Without upsert_on, a batch answers as before: no meta.
      const plain = await api('/deals/batch', { method: 'POST', json: { items: [{ title: 'Plain' }] } });
      expect(plain.body.meta).toBeUndefined();
    });

    it('contacts and companies upsert too; 6 concurrent upserts of one value: one created, five updated', async () => {
      await freshOrg();
      await define('contacts', { key: 'crm_ref', type: 'text', unique: true });
      await define('companies', { key: 'duns', type: 'text', unique: true });
      const deal = (await createDeal({ title: 'Home' })).body.data;
      const other = (await createDeal({ title: 'Elsewhere' })).body.data;
      const held = (
        await api('/contacts', {
          method: 'POST',
          json: { deal_id: deal.id, name: 'Ann', custom: { crm_ref: 'P-1' } },
        })
      ).body.data;
      const contacts = await api('/contacts/batch?upsert_on=crm_ref', {
        method: 'POST',
        json: {
          items: [
            { deal_id: other.id, name: 'Ann Smith', title: 'CFO', custom: { crm_ref: 'P-1' } },
            { deal_id: deal.id, name: 'Bob', custom: { crm_ref: 'P-2' } },
          ],
        },
      });
      expect(contacts.status, contacts.text).toBe(201);
      expect(contacts.body.meta).toEqual({ upserted_on: 'crm_ref', results: ['updated', 'created'] });
      // The updated contact keeps its own deal.
      expect(contacts.body.data[0]).toMatchObject({ id: held.id, name: 'Ann Smith', deal_id: deal.id });
      const updated = await api('/events?types=contact.updated');
      expect(updated.body.data.map((e: { data: { id: string } }) => e.data.id)).toEqual([held.id]);

      const company = (
        await api('/companies', { method: 'POST', json: { name: 'Acme', custom: { duns: '123' } } })
      ).body.data;
      const companies = await s.trpc(org).companies.batch.mutate({
        upsert_on: 'duns',
        items: [
          { name: 'Acme Inc', custom: { duns: '123' } },
          { name: 'Globex', custom: { duns: '456' } },
        ],
      });
      expect(companies.meta?.results).toEqual(['updated', 'created']);
      expect(companies.data[0]).toMatchObject({ id: company.id, name: 'Acme Inc' });
      const wrongField = await api('/companies/batch?upsert_on=crm_ref', {
        method: 'POST',
        json: { items: [{ name: 'x' }] },
      });
      expect(wrongField.body.error).toBe(
        'upsert_on: "crm_ref" is not a unique custom field of companies (its unique fields: duns)',
      );

      // Concurrent upserts of one new value take turns on its lock: the first creates, the others find it.
      const racers = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          api('/companies/batch?upsert_on=duns', {
            method: 'POST',
            json: { items: [{ name: `Racer ${i}`, custom: { duns: 'RACE' } }] },
          }),
        ),
      );
      expect(racers.map((r) => r.status)).toEqual([201, 201, 201, 201, 201, 201]);
      expect(racers.map((r) => r.body.meta.results[0]).sort()).toEqual([
        'created',
        'updated',
        'updated',
        'updated',
        'updated',
        'updated',
      ]);
      expect(new Set(racers.map((r) => r.body.data[0].id)).size).toBe(1);
    });

    it('edge values: a long unique text, a number PostgreSQL writes otherwise, deep JSON, a key named constructor', async () => {
      await freshOrg();
      await define('deals', { key: 'long_id', type: 'text', unique: true });
      const long = '🚀'.repeat(1_000); // 4,000 bytes: more than a B-tree entry holds
      const first = await createDeal({ title: 'Long', custom: { long_id: long } });
      expect(first.status, first.text).toBe(201);
      const again = await createDeal({ title: 'Long again', custom: { long_id: long } });
      expect(again.status).toBe(409);
      expect(again.body.conflicting_id).toBe(first.body.data.id);

      // 1e21 is "1000000000000000000000" to PostgreSQL: an upsert on it still finds its deal.
      await define('deals', { key: 'big_number', type: 'number', unique: true });
      const big = (await createDeal({ title: 'Big', custom: { big_number: 1e21 } })).body.data;
      const upserted = await api('/deals/batch?upsert_on=big_number', {
        method: 'POST',
        json: { items: [{ title: 'Big, renamed', custom: { big_number: 1e21 } }] },
      });
      expect(upserted.status, upserted.text).toBe(201);
      expect(upserted.body.meta.results).toEqual(['updated']);
      expect(upserted.body.data[0].id).toBe(big.id);

      await define('deals', { key: 'payload', type: 'json' });
      let deep: unknown = 1;
      for (let i = 0; i < 2_000; i++) deep = [deep];
      const tooDeep = await createDeal({ title: 'Deep', custom: { payload: deep } });
      expect(tooDeep.status).toBe(400);
      expect(tooDeep.body.error).toBe('custom.payload: nests deeper than 32 levels');
      const nul = await createDeal({ title: 'NUL', custom: { payload: { 'a\u0000b': 1 } } });
      expect(nul.status).toBe(400);
      expect(nul.body.error).toBe('custom.payload: a key must not contain NUL characters');

      await define('deals', { key: 'constructor', type: 'text', required: true, default: 'built' });
      const made = await createDeal({ title: 'Built' });
      expect(made.body.data.custom).toEqual({ constructor: 'built' });
    });

    it('making a field required or unique is refused (409, count and first ids) while the data breaks it', async () => {
      await freshOrg();
      await define('deals', { key: 'code', type: 'text' });
      const a = (await createDeal({ title: 'A', custom: { code: 'X' } })).body.data;
      const b = (await createDeal({ title: 'B', custom: { code: 'X' } })).body.data;
      const c = (await createDeal({ title: 'C' })).body.data;
      const unique = await api('/custom-fields/deals/code', { method: 'PATCH', json: { unique: true } });
      expect(unique.status).toBe(409);
      expect(unique.body.error).toMatch(
        /^unique: 1 values of code are held by more than one of deals \(first: "X" by /,
      );
      expect(unique.body.error).toContain(a.id);
      expect(unique.body.error).toContain(b.id);
      const required = await api('/custom-fields/deals/code', { method: 'PATCH', json: { required: true } });
      expect(required.status).toBe(409);
      expect(required.body.error).toBe(
        `required: 1 deals have no value for code (first: ${c.id}); give them one, or a default, first`,
      );
      // Once the data fits, the change goes through and holds from then on.
      await api(`/deals/${b.id}`, { method: 'PATCH', json: { custom: { code: 'Y' } } });
      const ok = await api('/custom-fields/deals/code', { method: 'PATCH', json: { unique: true } });
      expect(ok.status, ok.text).toBe(200);
      expect(ok.body.data.unique).toBe(true);
      const dup = await api(`/deals/${c.id}`, { method: 'PATCH', json: { custom: { code: 'Y' } } });
      expect(dup.status).toBe(409);
      expect(dup.body.conflicting_id).toBe(b.id);
    });

    it('a type change is a convert: a dry run names what would not convert, applying is all or nothing (or clears them)', async () => {
      await freshOrg();
      await define('deals', { key: 'seats', type: 'text', unique: true });
      const ok = (await createDeal({ title: 'A', custom: { seats: ' 40 ' } })).body.data;
      const same = (await createDeal({ title: 'B', custom: { seats: '7' } })).body.data;
      const bad = (await createDeal({ title: 'C', custom: { seats: 'many' } })).body.data;
      await createDeal({ title: 'None' });
      const convert = (json: Record<string, unknown>) =>
        api('/custom-fields/deals/seats/convert', { method: 'POST', json });

      const dry = await convert({ type: 'number', dry_run: true });
      expect(dry.status, dry.text).toBe(200);
      expect(dry.body.data).toEqual({
        object: 'deals',
        key: 'seats',
        from: 'text',
        to: 'number',
        dry_run: true,
        applied: false,
        records: 3,
        converted: 2,
        changed: 2,
        failed: 1,
        failures: [{ id: bad.id, value: 'many', reason: 'expected number, got string' }],
      });
      expect((await api('/custom-fields/deals/seats')).body.data.type).toBe('text');

      const refused = await convert({ type: 'number' });
      expect(refused.status).toBe(409);
      expect(refused.body.error).toBe(
        `type: 1 deals hold values of seats that do not convert to number (first: ${bad.id} "many": expected number, got string); change or clear them, or send clear_unconvertible: true to clear them`,
      );
      expect(refused.body.conflicting_id).toBe(bad.id);
      expect((await api(`/deals/${ok.id}`)).body.data.deal.custom).toEqual({ seats: ' 40 ' });
      // Not a type a unique field can have, nor a select without options: 400s naming the rule.
      expect((await convert({ type: 'json', dry_run: true })).body.error).toMatch(
        /^unique: a json field cannot be unique/,
      );
      expect((await convert({ type: 'select', dry_run: true })).body.error).toBe(
        'options: a select field needs at least one option',
      );

      // Over tRPC, told to clear what does not convert: the field is a number, the values numbers.
      const applied = await s.trpc(org).customFields.convert.mutate({
        object: 'deals',
        key: 'seats',
        type: 'number',
        validation: { min: 0 },
        clear_unconvertible: true,
      });
      expect(applied.data).toMatchObject({ applied: true, converted: 2, failed: 1 });
      expect(applied.data.field).toMatchObject({ type: 'number', unique: true, validation: { min: 0 } });
      expect((await api(`/deals/${ok.id}`)).body.data.deal.custom).toEqual({ seats: 40 });
      expect((await api(`/deals/${same.id}`)).body.data.deal.custom).toEqual({ seats: 7 });
      expect((await api(`/deals/${bad.id}`)).body.data.deal.custom).toEqual({});
      // The unique claims follow the converted values; new writes take numbers only.
      const dup = await createDeal({ title: 'Dup', custom: { seats: 40 } });
      expect(dup.status).toBe(409);
      expect(dup.body.conflicting_id).toBe(ok.id);
      expect((await createDeal({ title: 'Text', custom: { seats: '41' } })).status).toBe(400);

      // Two values that become one on a unique field: the unique rule's 409, nothing changed.
      await define('deals', { key: 'ref', type: 'text', unique: true });
      await createDeal({ title: 'R1', custom: { ref: '1' } });
      const r2 = (await createDeal({ title: 'R2', custom: { ref: '1.0' } })).body.data;
      const collide = await api('/custom-fields/deals/ref/convert', {
        method: 'POST',
        json: { type: 'number' },
      });
      expect(collide.status).toBe(409);
      expect(collide.body.error).toMatch(/^custom\.ref: the value is already held by deal /);
      expect((await api('/custom-fields/deals/ref')).body.data.type).toBe('text');
      expect((await api(`/deals/${r2.id}`)).body.data.deal.custom).toEqual({ ref: '1.0' });

      // MCP: the tool, as any operation.
      const mcp = await mcpClient(s.url, org.apiKey);
      try {
        const viaMcp = (await mcp.callTool({
          name: 'customFields-convert',
          arguments: { object: 'deals', key: 'seats', type: 'text', dry_run: true },
        })) as CallToolResult;
        expect(viaMcp.isError).toBeFalsy();
        expect(viaMcp.structuredContent).toMatchObject({ data: { records: 2, converted: 2, changed: 2 } });
      } finally {
        await mcp.close();
      }
    });

    it('archiving keeps values readable, refuses new ones, and the key is never reused; options left out are archived', async () => {
      await freshOrg();
      await define('deals', {
        key: 'region',
        type: 'select',
        options: [{ value: 'emea' }, { value: 'apac' }],
      });
      const deal = (await createDeal({ title: 'A', custom: { region: 'apac' } })).body.data;
      const narrowed = await api('/custom-fields/deals/region', {
        method: 'PATCH',
        json: { options: [{ value: 'emea' }] },
      });
      expect(narrowed.body.data.options).toEqual([
        { value: 'emea', label: 'emea', archived: false },
        { value: 'apac', label: 'apac', archived: true },
      ]);
      expect((await createDeal({ title: 'B', custom: { region: 'apac' } })).status).toBe(400);
      expect((await api(`/deals/${deal.id}`)).body.data.deal.custom).toEqual({ region: 'apac' });

      const archived = await api('/custom-fields/deals/region', { method: 'DELETE' });
      expect(archived.status).toBe(200);
      expect(archived.body.data.archived).toBe(true);
      expect((await api('/custom-fields/deals')).body.data).toEqual([]);
      expect((await api('/custom-fields/deals?include_archived=true')).body.data).toHaveLength(1);
      expect((await api(`/deals/${deal.id}`)).body.data.deal.custom).toEqual({ region: 'apac' });
      const write = await createDeal({ title: 'C', custom: { region: 'emea' } });
      expect(write.status).toBe(400);
      expect(write.body.error).toBe('custom.region: the field is archived and takes no more values');
      const reuse = await api('/custom-fields/deals', {
        method: 'POST',
        json: { key: 'region', type: 'text' },
      });
      expect(reuse.status).toBe(409);
      expect(reuse.body.error).toMatch(/was archived; a key is never used again/);
    });

    it('GET /usage/limits says how much of each limit is used: fields, options, pipelines, stages, webhooks', async () => {
      await freshOrg();
      // Other tests' organizations on this server hold fields: none of theirs count here.
      const before = (await api('/usage/limits')).body.data;
      expect(before.custom_fields.deals).toEqual({
        fields: { used: 0, limit: 200 },
        indexed_fields: { used: 0, limit: 20 },
        options_per_select: { used: 0, limit: 500, key: null },
        value_bytes_per_record: { limit: 32768 },
      });
      await define('deals', { key: 'arr', type: 'number' });
      await define('deals', {
        key: 'region',
        type: 'select',
        indexed: true,
        options: [{ value: 'emea' }, { value: 'apac' }, { value: 'amer' }],
      });
      await define('deals', { key: 'tags', type: 'multi_select', options: [{ value: 'a' }, { value: 'b' }] });
      await define('contacts', { key: 'seniority', type: 'number' });
      // An archived field keeps its key, so it still counts.
      expect((await api('/custom-fields/deals/arr', { method: 'DELETE' })).status).toBe(200);
      const res = await api('/usage/limits');
      expect(res.status).toBe(200);
      const [pipeline] = (await api('/pipelines')).body.data;
      expect(res.body.data).toEqual({
        custom_fields: {
          deals: {
            fields: { used: 3, limit: 200 },
            indexed_fields: { used: 1, limit: 20 },
            options_per_select: { used: 3, limit: 500, key: 'region' },
            value_bytes_per_record: { limit: 32768 },
          },
          contacts: {
            fields: { used: 1, limit: 200 },
            indexed_fields: { used: 0, limit: 20 },
            options_per_select: { used: 0, limit: 500, key: null },
            value_bytes_per_record: { limit: 32768 },
          },
          companies: {
            fields: { used: 0, limit: 200 },
            indexed_fields: { used: 0, limit: 20 },
            options_per_select: { used: 0, limit: 500, key: null },
            value_bytes_per_record: { limit: 32768 },
          },
        },
        pipelines: { used: 1, limit: 100 },
        stages_per_pipeline: { used: pipeline.stages.length, limit: 50, pipeline_id: pipeline.id },
        webhook_endpoints: { used: 0, limit: 100 },
        saved_views: { used: 0, limit: 500 },
      });
      // GET /usage answers as the contract says, without these.
      expect(Object.keys((await api('/usage')).body.data).sort()).toEqual([
        'alerts',
        'period',
        'quotas',
        'rate_limits',
      ]);
    });

    it('refuses definitions that make no sense, naming what is wrong', async () => {
      await freshOrg();
      const bad: Array<[unknown, RegExp]> = [
        [{ key: 'Bad Key', type: 'text' }, /^key: must be snake_case/],
        [{ key: 'a', type: 'colour' }, /^type: /],
        [{ key: 'a', type: 'select' }, /^options: a select field needs at least one option$/],
        [{ key: 'a', type: 'text', options: [{ value: 'x' }] }, /^options: only select and multi_select/],
        [{ key: 'a', type: 'boolean', unique: true }, /^unique: a boolean field cannot be unique/],
        [{ key: 'a', type: 'number', default: 'ten' }, /^default: expected number, got string$/],
        [{ key: 'a', type: 'text', validation: { min: 1 } }, /^validation: min and max apply to number/],
        [
          { key: 'a', type: 'text', validation: { pattern: '(?<=x)y' } },
          /^validation\.pattern: not a regular expression/,
        ],
        [{ key: 'a', type: 'text', bogus: 1 }, /Unknown property: bogus/],
      ];
      for (const [json, message] of bad) {
        const res = await api('/custom-fields/deals', { method: 'POST', json });
        expect(res.status, JSON.stringify(json)).toBe(400);
        expect(res.body.error).toMatch(message);
      }
      expect((await api('/custom-fields/activities')).status).toBe(400);
      expect((await api('/custom-fields/deals/missing')).status).toBe(404);
      await define('deals', { key: 'a', type: 'text' });
      const dup = await api('/custom-fields/deals', { method: 'POST', json: { key: 'a', type: 'text' } });
      expect(dup.status).toBe(409);
    });

    it('contacts take custom values too, and fields stay in their organization', async () => {
      await freshOrg();
      await define('contacts', { key: 'linkedin_followers', type: 'number', validation: { min: 0 } });
      const deal = (await createDeal({ title: 'Acme' })).body.data;
      const contact = await api('/contacts', {
        method: 'POST',
        json: { name: 'Ann', deal_id: deal.id, custom: { linkedin_followers: 1200 } },
      });
      expect(contact.status, contact.text).toBe(201);
      expect(contact.body.data.custom).toEqual({ linkedin_followers: 1200 });
      const patched = await api(`/contacts/${contact.body.data.id}`, {
        method: 'PATCH',
        json: { custom: { linkedin_followers: -1 } },
      });
      expect(patched.status).toBe(400);
      expect(patched.body.error).toBe('custom.linkedin_followers: Too small: expected number to be >=0');
      expect((await api('/contacts')).body.data[0].custom).toEqual({ linkedin_followers: 1200 });
      expect((await api('/search?q=ann')).body.data.contacts[0].custom).toEqual({ linkedin_followers: 1200 });
      // Another organization neither sees the field nor may write it.
      expect((await s.api('/custom-fields/contacts')).body.data).toEqual([]);
      expect((await s.api('/custom-fields/contacts/linkedin_followers')).status).toBe(404);
    });

    it('schema:read and schema:write scopes; tRPC and MCP reach the same operations', async () => {
      await freshOrg();
      const fork = () => s.running.db.orm.em.fork();
      const { api_key: reader } = await issueApiKey(fork(), org.orgId, { scopes: ['schema:read'] });
      const refused = await api('/custom-fields/deals', {
        key: reader,
        method: 'POST',
        json: { key: 'a', type: 'text' },
      });
      expect(refused.status).toBe(403);
      expect(refused.body.code).toBe('insufficient_scope');
      expect((await api('/custom-fields/deals', { key: reader })).status).toBe(200);

      const trpc = s.trpc(org);
      const made = await trpc.customFields.create.mutate({ object: 'deals', key: 'seats', type: 'number' });
      expect(made.data.key).toBe('seats');
      const deal = await trpc.deals.create.mutate({ title: 'Via tRPC', custom: { seats: 40 } });
      expect(deal.data.custom).toEqual({ seats: 40 });

      const mcp = await mcpClient(s.url, org.apiKey);
      try {
        const tools = await mcp.listTools();
        expect(tools.tools.map((t) => t.name)).toContain('customFields-list');
        // The tools that write deals list this organization's own fields, typed, in their schemas.
        const schemaOf = (name: string) => tools.tools.find((t) => t.name === name)?.inputSchema;
        expect(schemaOf('deals-create')?.properties?.custom).toMatchObject({
          type: 'object',
          properties: { seats: { type: 'number', description: 'seats (number)' } },
          additionalProperties: false,
        });
        expect(JSON.stringify(schemaOf('deals-batch'))).toContain('"seats":{"type":"number"');
        expect(schemaOf('deals-update')?.properties?.custom).toMatchObject({
          properties: { seats: { anyOf: [{ type: 'number' }, { type: 'null' }] } },
        });
        // Another organization's agent sees none of them.
        const otherMcp = await mcpClient(s.url, s.orgB.apiKey);
        try {
          const theirs = (await otherMcp.listTools()).tools.find((t) => t.name === 'deals-create');
          expect(theirs?.inputSchema.properties?.custom).toMatchObject({ properties: {} });
        } finally {
          await otherMcp.close();
        }
        const listed = (await mcp.callTool({
          name: 'customFields-list',
          arguments: { object: 'deals' },
        })) as CallToolResult;
        expect(listed.isError).toBeFalsy();
        expect(JSON.stringify(listed.structuredContent)).toContain('"seats"');
        const created = (await mcp.callTool({
          name: 'deals-create',
          arguments: { title: 'Via MCP', custom: { seats: 'many' } },
        })) as CallToolResult;
        expect(created.isError).toBe(true);
        expect(JSON.stringify(created.content)).toContain('custom.seats: expected number, got string');
      } finally {
        await mcp.close();
      }
      expect(made.data.created_at).toBeTruthy();
      expect(deal.data.id).toMatch(UUID);
    });
  });
}
