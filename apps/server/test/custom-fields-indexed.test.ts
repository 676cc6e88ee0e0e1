import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVERS, startTestServer, type TestOrg, type TestServer } from './harness.ts';

// biome-ignore lint/suspicious/noExplicitAny: the API's JSON
type Row = Record<string, any>;

/** An index row as the test compares it: key, text, number, instant, record. */
type Entry = [string, string | null, number | null, string | null, string];

const byText = (a: Entry, b: Entry) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1);

/**
 * What `custom_indexed_values` must hold for records of these values, as docs/api/query.md says it: a row
 * per value of an indexed field in the column of its type (text to its first 500 characters, a date at its
 * midnight UTC, a multi-select's options one each), none for a field that is not indexed.
 */
function expectedEntries(records: Row[], types: Record<string, string>): Entry[] {
  const entries: Entry[] = [];
  for (const record of records)
    for (const [key, value] of Object.entries(record.custom ?? {})) {
      const type = types[key];
      if (!type || value === null) continue;
      if (type === 'multi_select')
        for (const option of new Set(value as string[])) entries.push([key, option, null, null, record.id]);
      else if (type === 'number' || type === 'currency')
        entries.push([key, null, value as number, null, record.id]);
      else if (type === 'date') entries.push([key, null, null, `${value}T00:00:00.000Z`, record.id]);
      else if (type === 'datetime')
        entries.push([key, null, null, new Date(value as string).toISOString(), record.id]);
      else entries.push([key, String(value).slice(0, 500), null, null, record.id]);
    }
  return entries.sort(byText);
}

for (const { driver, label, skip } of DRIVERS) {
  describe.skipIf(skip)(`indexed custom fields on ${label}`, () => {
    let s: TestServer;
    let org: TestOrg;
    beforeAll(async () => {
      s = await startTestServer(driver);
    });
    afterAll(async () => {
      await s?.stop();
    });
    const freshOrg = async () => {
      org = await s.newOrg(`indexed ${Math.random()}`);
      return org;
    };
    const api = (path: string, init: Parameters<TestServer['api']>[1] = {}) =>
      s.api(path, { key: org.apiKey, ...init });
    const define = async (object: string, field: Record<string, unknown>) => {
      const res = await api(`/custom-fields/${object}`, { method: 'POST', json: field });
      expect(res.status, res.text).toBe(201);
      return res.body.data;
    };
    const patchField = (object: string, key: string, json: Record<string, unknown>) =>
      api(`/custom-fields/${object}/${key}`, { method: 'PATCH', json });
    /** The organization's rows of `object` in the kept table, as Entry. */
    const held = async (object: string): Promise<Entry[]> => {
      const rows = await s.sql<Row>(
        `select key, value_text, value_num::text as value_num, value_time, record_id
           from custom_indexed_values where org_id = ? and object = ?`,
        [org.orgId, object],
      );
      return rows
        .map(
          (r): Entry => [
            r.key,
            r.value_text,
            r.value_num === null ? null : Number(r.value_num),
            r.value_time === null ? null : new Date(r.value_time).toISOString(),
            r.record_id,
          ],
        )
        .sort(byText);
    };
    /** Every record of `object` (its list, a page of 100) and the indexed fields' types. */
    const expectedOf = async (object: string) => {
      const records = (await api(`/${object}?limit=100`)).body.data as Row[];
      const fields = (await api(`/custom-fields/${object}`)).body.data as Row[];
      const types = Object.fromEntries(fields.filter((f) => f.indexed).map((f) => [f.key, f.type]));
      return expectedEntries(records, types);
    };
    const expectExact = async (object: string, step: string) => {
      expect(await held(object), step).toEqual(await expectedOf(object));
    };

    it('defines indexed fields (not long_text or json), shown in GET and exported; the schema file and usage carry them', async () => {
      await freshOrg();
      const region = await define('deals', {
        key: 'region',
        type: 'select',
        indexed: true,
        options: [{ value: 'emea' }, { value: 'apac' }],
      });
      expect(region).toMatchObject({ key: 'region', indexed: true, unique: false });
      expect(
        (await define('deals', { key: 'arr', type: 'number', validation: { min: 0, max: 10 } })).indexed,
      ).toBe(false);
      expect((await api('/custom-fields/deals/region')).body.data.indexed).toBe(true);
      for (const type of ['long_text', 'json']) {
        const res = await api('/custom-fields/deals', {
          method: 'POST',
          json: { key: `a_${type}`, type, indexed: true },
        });
        expect(res.status).toBe(400);
        expect(res.body.error).toBe(
          `indexed: a ${type} field cannot be indexed (only text, email, url, phone, select, multi_select, number, currency, date, datetime, boolean)`,
        );
      }
      const notes = await define('deals', { key: 'notes_long', type: 'long_text' });
      expect((await patchField('deals', notes.key, { indexed: true })).status).toBe(400);
      // A schema file stating the fields as they are plans nothing: `indexed` is part of a field's state
      // (and a validation's keys, which the database stores in another order, are no change either).
      const same = await api('/custom-fields/plan', {
        method: 'POST',
        json: {
          version: 1,
          objects: {
            deals: [
              {
                key: 'region',
                type: 'select',
                indexed: true,
                options: [{ value: 'emea' }, { value: 'apac' }],
              },
              { key: 'arr', type: 'number', validation: { min: 0, max: 10 } },
              { key: 'notes_long', type: 'long_text' },
            ],
          },
        },
      });
      expect(same.body.data).toEqual({ steps: [], applicable: true });
      const usage = (await api('/usage/limits')).body.data.custom_fields;
      expect(usage.deals.indexed_fields).toEqual({ used: 1, limit: 20 });
      expect(usage.contacts.indexed_fields).toEqual({ used: 0, limit: 20 });
    });

    it('every write keeps the table exact: create, update, clear, batch, upsert, delete, on deals, contacts and companies', async () => {
      await freshOrg();
      await define('deals', { key: 'ext', type: 'text', unique: true, indexed: true });
      await define('deals', {
        key: 'region',
        type: 'select',
        indexed: true,
        options: ['emea', 'apac', 'amer'].map((value) => ({ value })),
      });
      await define('deals', { key: 'arr', type: 'currency', indexed: true });
      await define('deals', {
        key: 'tags',
        type: 'multi_select',
        indexed: true,
        options: ['a', 'b', 'c'].map((value) => ({ value })),
      });
      await define('deals', { key: 'renewal', type: 'date', indexed: true });
      await define('deals', { key: 'kickoff', type: 'datetime', indexed: true });
      await define('deals', { key: 'strategic', type: 'boolean', indexed: true });
      await define('deals', { key: 'owner_email', type: 'email', indexed: true });
      await define('deals', { key: 'memo', type: 'text', indexed: true });
      // Not indexed: no rows.
      await define('deals', { key: 'segment', type: 'text' });

      const created = await api('/deals', {
        method: 'POST',
        json: {
          title: 'One',
          custom: {
            ext: 'E-1',
            region: 'emea',
            arr: 1200.5,
            tags: ['a', 'c'],
            renewal: '2027-01-31',
            kickoff: '2026-12-01T09:30:00+02:00',
            strategic: true,
            owner_email: 'Ann@Acme.io',
            memo: 'x'.repeat(600),
            segment: 'smb',
          },
        },
      });
      expect(created.status, created.text).toBe(201);
      const one = created.body.data;
      await expectExact('deals', 'create');
      // A long text is kept to its first 500 characters: found whole all the same, and a value that is
      // only its first 500 is not it (the JSON decides what the kept prefix cannot).
      expect((await held('deals')).find((e) => e[0] === 'memo')?.[1]).toHaveLength(500);
      const byMemo = async (value: string) =>
        (
          await api(
            `/deals?filter=${encodeURIComponent(JSON.stringify({ field: 'custom.memo', op: 'eq', value }))}`,
          )
        ).body;
      expect(await byMemo('x'.repeat(600))).toMatchObject({ data: [{ id: one.id }], meta: { total: 1 } });
      expect(await byMemo('x'.repeat(500))).toMatchObject({ data: [], meta: { total: 0 } });
      expect(await byMemo('x'.repeat(499))).toMatchObject({ data: [], meta: { total: 0 } });

      const patched = await api(`/deals/${one.id}`, {
        method: 'PATCH',
        json: { custom: { region: 'apac', tags: ['b'], renewal: null, arr: 1200.5, segment: 'mid' } },
      });
      expect(patched.status, patched.text).toBe(200);
      await expectExact('deals', 'update and clear');
      // A PATCH of fields outside custom leaves the rows as they are.
      expect((await api(`/deals/${one.id}`, { method: 'PATCH', json: { value: 5 } })).status).toBe(200);
      await expectExact('deals', 'update without custom');

      const batch = await api('/deals/batch', {
        method: 'POST',
        json: {
          items: [
            { title: 'Two', custom: { ext: 'E-2', region: 'amer', tags: [], strategic: false } },
            { title: 'Three', custom: { ext: 'E-3', arr: 0, kickoff: '2027-03-01T00:00:00Z' } },
            { title: 'Plain' },
          ],
        },
      });
      expect(batch.status, batch.text).toBe(201);
      await expectExact('deals', 'batch');
      const upsert = await api('/deals/batch?upsert_on=ext', {
        method: 'POST',
        json: {
          items: [
            { title: 'Two again', custom: { ext: 'E-2', region: 'emea', arr: 7 } },
            { title: 'Four', custom: { ext: 'E-4', tags: ['a', 'b', 'c'] } },
          ],
        },
      });
      expect(upsert.status, upsert.text).toBe(201);
      expect(upsert.body.meta.results).toEqual(['updated', 'created']);
      await expectExact('deals', 'upsert');
      expect((await api(`/deals/${one.id}`, { method: 'DELETE' })).status).toBe(200);
      await expectExact('deals', 'delete');
      expect((await held('deals')).some((e) => e[4] === one.id)).toBe(false);
      // A batch that fails writes nothing, rows included.
      const before = await held('deals');
      const failed = await api('/deals/batch', {
        method: 'POST',
        json: {
          items: [
            { title: 'Five', custom: { ext: 'E-5', region: 'emea' } },
            { title: 'Dup', custom: { ext: 'E-2' } },
          ],
        },
      });
      expect(failed.status).toBe(409);
      expect(await held('deals')).toEqual(before);

      // Contacts and companies: the same triggers.
      await define('contacts', { key: 'seniority', type: 'number', indexed: true });
      await define('companies', { key: 'tier', type: 'text', indexed: true });
      const deal = batch.body.data[2];
      const contact = (
        await api('/contacts', {
          method: 'POST',
          json: { deal_id: deal.id, name: 'Ann', custom: { seniority: 3 } },
        })
      ).body.data;
      await api(`/contacts/${contact.id}`, { method: 'PATCH', json: { custom: { seniority: 4 } } });
      await api('/contacts/batch', {
        method: 'POST',
        json: {
          items: [
            { deal_id: deal.id, name: 'Bob', custom: { seniority: 1 } },
            { deal_id: deal.id, name: 'Cy' },
          ],
        },
      });
      await expectExact('contacts', 'contacts');
      const company = (
        await api('/companies', { method: 'POST', json: { name: 'Acme', custom: { tier: 'gold' } } })
      ).body.data;
      await api('/companies/batch', {
        method: 'POST',
        json: { items: [{ name: 'Globex', custom: { tier: 'silver' } }] },
      });
      await expectExact('companies', 'companies');
      expect((await api(`/companies/${company.id}`, { method: 'DELETE' })).status).toBe(200);
      await expectExact('companies', 'company deleted');
      // Deleting a deal deletes its contacts: theirs go too.
      expect((await api(`/deals/${deal.id}`, { method: 'DELETE' })).status).toBe(200);
      await expectExact('contacts', 'contacts deleted with their deal');
      expect(await held('contacts')).toEqual([]);
    });

    it('turning indexed on indexes the records held; off, archiving and a convert keep the table exact', async () => {
      await freshOrg();
      await define('deals', { key: 'code', type: 'text' });
      await define('deals', { key: 'seats', type: 'number' });
      for (let i = 0; i < 5; i++)
        await api('/deals', {
          method: 'POST',
          json: { title: `D${i}`, custom: { code: `2027-01-0${i + 1}`, ...(i % 2 ? { seats: i } : {}) } },
        });
      expect(await held('deals')).toEqual([]);
      const on = await patchField('deals', 'seats', { indexed: true });
      expect(on.status, on.text).toBe(200);
      expect(on.body.data.indexed).toBe(true);
      expect(await held('deals')).toHaveLength(2);
      await expectExact('deals', 'seats indexed');
      expect((await patchField('deals', 'code', { indexed: true })).status).toBe(200);
      expect(await held('deals')).toHaveLength(7);
      await expectExact('deals', 'code indexed');
      // The filter reads it, and its total is the table's count: the same answer as the JSON's.
      const filtered = await api(
        `/deals?filter=${encodeURIComponent(JSON.stringify({ field: 'custom.seats', op: 'gte', value: 2 }))}`,
      );
      expect(filtered.body.data.map((d: Row) => d.title)).toEqual(['D3']);
      expect(filtered.body.meta.total).toBe(1);

      // A convert whose values keep their JSON (a text of dates to a date) is indexed by the new type.
      const converted = await api('/custom-fields/deals/code/convert', {
        method: 'POST',
        json: { type: 'date' },
      });
      expect(converted.status, converted.text).toBe(200);
      expect(converted.body.data.field).toMatchObject({ type: 'date', indexed: true });
      await expectExact('deals', 'converted');
      expect((await held('deals')).filter((e) => e[0] === 'code').every((e) => e[3] !== null)).toBe(true);
      // To a type an index cannot serve: refused, as a create would be.
      const toJson = await api('/custom-fields/deals/code/convert', {
        method: 'POST',
        json: { type: 'json', dry_run: true },
      });
      expect(toJson.status).toBe(400);
      expect(toJson.body.error).toMatch(/^indexed: a json field cannot be indexed/);

      const off = await patchField('deals', 'seats', { indexed: false });
      expect(off.body.data.indexed).toBe(false);
      await expectExact('deals', 'seats no longer indexed');
      expect((await held('deals')).some((e) => e[0] === 'seats')).toBe(false);
      // Archived: its rows go, the flag stays as it was (as unique's does); its values filter from the JSON.
      const archived = await api('/custom-fields/deals/code', { method: 'DELETE' });
      expect(archived.body.data).toMatchObject({ archived: true, indexed: true });
      expect(await held('deals')).toEqual([]);
      const byArchived = await api(
        `/deals?filter=${encodeURIComponent(JSON.stringify({ field: 'custom.code', op: 'eq', value: '2027-01-02' }))}`,
      );
      expect(byArchived.body.data.map((d: Row) => d.title)).toEqual(['D1']);
      expect((await api('/usage/limits')).body.data.custom_fields.deals.indexed_fields.used).toBe(0);
    });

    it('20 indexed fields per object: the 21st is a 409 naming the limit, on create and PATCH', async () => {
      await freshOrg();
      for (let i = 0; i < 20; i++) await define('contacts', { key: `f${i}`, type: 'text', indexed: true });
      await define('contacts', { key: 'plain', type: 'text' });
      const refused = await api('/custom-fields/contacts', {
        method: 'POST',
        json: { key: 'more', type: 'number', indexed: true },
      });
      expect(refused.status).toBe(409);
      expect(refused.body).toMatchObject({
        code: 'conflict',
        error: expect.stringMatching(
          /^indexed: contacts has 20 indexed custom fields, the limit \(20\); unset indexed on one of them first \(f0, f1, /,
        ),
      });
      expect((await api('/custom-fields/contacts/more')).status).toBe(404);
      const patched = await patchField('contacts', 'plain', { indexed: true });
      expect(patched.status).toBe(409);
      expect(patched.body.error).toMatch(/^indexed: contacts has 20 indexed custom fields, the limit \(20\)/);
      expect((await api('/usage/limits')).body.data.custom_fields.contacts.indexed_fields).toEqual({
        used: 20,
        limit: 20,
      });
      // One archived frees its place.
      expect((await api('/custom-fields/contacts/f0', { method: 'DELETE' })).status).toBe(200);
      expect((await patchField('contacts', 'plain', { indexed: true })).status).toBe(200);
      // Deals are counted on their own.
      await define('deals', { key: 'region', type: 'text', indexed: true });
    });

    it('a schema file plans and applies an index: added, dropped, with the records it touches; over 20 is a 400', async () => {
      await freshOrg();
      await define('deals', { key: 'region', type: 'text' });
      await define('deals', { key: 'tier', type: 'text', indexed: true });
      for (const [i, region] of ['emea', 'apac', 'emea'].entries())
        await api('/deals', {
          method: 'POST',
          json: { title: `D${i}`, custom: { region, ...(i ? { tier: 'gold' } : {}) } },
        });
      const file = {
        version: 1,
        objects: {
          deals: [
            { key: 'region', type: 'text', indexed: true },
            { key: 'tier', type: 'text' },
            { key: 'seats', type: 'number', indexed: true },
          ],
        },
      };
      const plan = await api('/custom-fields/plan', { method: 'POST', json: file });
      expect(plan.status, plan.text).toBe(200);
      expect(plan.body.data).toEqual({
        applicable: true,
        steps: [
          {
            object: 'deals',
            key: 'region',
            action: 'change',
            changes: { indexed: { from: null, to: true } },
            index: { action: 'build', records: 3 },
          },
          {
            object: 'deals',
            key: 'tier',
            action: 'change',
            changes: { indexed: { from: true, to: null } },
            index: { action: 'drop', records: 2 },
          },
          { object: 'deals', key: 'seats', action: 'add', index: { action: 'build', records: 0 } },
        ],
      });
      const applied = await api('/custom-fields/apply', { method: 'POST', json: file });
      expect(applied.status, applied.text).toBe(200);
      expect(applied.body.data.fields.map((f: Row) => [f.key, f.indexed])).toEqual([
        ['region', true],
        ['tier', false],
        ['seats', true],
      ]);
      await expectExact('deals', 'applied');
      expect((await held('deals')).map((e) => e[0])).toEqual(['region', 'region', 'region']);
      // The export states it; planned again, nothing changes.
      const again = await api('/custom-fields/plan', { method: 'POST', json: file });
      expect(again.body.data).toEqual({ steps: [], applicable: true });
      // Archiving an indexed field drops its index.
      const archive = await api('/custom-fields/plan', {
        method: 'POST',
        json: { version: 1, objects: { deals: file.objects.deals.slice(1) } },
      });
      expect(archive.body.data.steps).toEqual([
        {
          object: 'deals',
          key: 'region',
          action: 'archive',
          records_with_values: 3,
          index: { action: 'drop', records: 3 },
        },
      ]);
      const tooMany = await api('/custom-fields/plan', {
        method: 'POST',
        json: {
          version: 1,
          objects: {
            deals: Array.from({ length: 21 }, (_, i) => ({ key: `k${i}`, type: 'text', indexed: true })),
          },
        },
      });
      expect(tooMany.status).toBe(400);
      expect(tooMany.body.error).toBe(
        'objects.deals: 21 fields are indexed, over the limit of 20 per object',
      );
    });
  });
}
