import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVERS, startTestServer, type TestOrg, type TestServer } from '../../server/test/harness.ts';
import { crmProcess } from './cli-process.ts';
import { crm } from './crm.ts';

const VALID = 2_500;
/** A uuid no organization holds. */
const UUID_ELSEWHERE = '019a0000-0000-7000-8000-0000000000ff'; // more than two chunks of the import's transactions

/** `crm import` beside a running server: on PGlite the server holds the data directory and runs it. */
for (const { driver, label, skip } of DRIVERS) {
  describe.skipIf(skip)(`crm import on ${label}`, () => {
    let s: TestServer;
    let dir: string;
    let org: TestOrg;
    let dbEnv: Record<string, string>;
    beforeAll(async () => {
      dir = await mkdtemp(path.join(tmpdir(), 'crm-import-'));
      s = await startTestServer(driver, driver === 'pglite' ? { CRM_DATA_DIR: path.join(dir, 'data') } : {});
      dbEnv =
        driver === 'pglite'
          ? { CRM_DATA_DIR: path.join(dir, 'data') }
          : { DATABASE_URL: s.env.DATABASE_URL as string };
      org = await s.newOrg('Importer');
    }, 60_000);
    afterAll(async () => {
      await s?.stop();
      await rm(dir, { recursive: true, force: true });
    });

    const importFile = (file: string, ...more: string[]) =>
      crm({ LOG_LEVEL: 'silent', ...dbEnv }, 'import', file, '--org', org.orgId, ...more);

    it('loads an NDJSON file in chunks, rejects bad rows with their line and reason, and the API sees the rest', async () => {
      const lines: string[] = [];
      for (let i = 0; i < VALID; i++)
        lines.push(
          JSON.stringify({
            title: `Imported ${i}`,
            value: i,
            stage: i % 2 ? 'qualified' : 'Closed Won',
            created_at: new Date(Date.UTC(2025, 0, 1) + i * 60_000).toISOString(),
            ...(i % 10 === 0 ? { contacts: [{ name: `Person ${i}`, role_type: 'champion' }] } : {}),
          }),
        );
      lines.splice(10, 0, JSON.stringify({ title: 'No such stage', stage: 'Won-ish' })); // line 11
      lines.splice(20, 0, '{"title": "broken'); // line 21
      lines.splice(30, 0, JSON.stringify({ value: 5 })); // line 31
      lines.splice(40, 0, JSON.stringify({ title: 'Bad contact', contacts: [{ name: 'X', email: 'nope' }] })); // 41
      const file = path.join(dir, 'deals.ndjson');
      await writeFile(file, `${lines.join('\n')}\n`);

      const result = await importFile(file);
      expect(result.stderr).toContain(`4 row(s) rejected: each is in ${file}.rejected.ndjson`);
      expect(result.code).toBe(0);
      expect(result.lines[0]).toMatchObject({
        org_id: org.orgId,
        read: VALID + 4,
        imported: VALID,
        rejected: 4,
        rejects_file: `${file}.rejected.ndjson`,
      });
      const rejects = (await readFile(`${file}.rejected.ndjson`, 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(rejects.map((r) => [r.line, r.error.split(':')[0]])).toEqual([
        [11, 'stage'],
        [21, 'not JSON'],
        [31, 'title'],
        [41, 'contacts[0].email'],
      ]);
      expect(rejects[0].error).toMatch(/no stage named "Won-ish" in pipeline .*\(Lead, Qualified/);
      expect(rejects[0].row).toEqual({ title: 'No such stage', stage: 'Won-ish' });

      const deals = await s.api('/deals?limit=1', { key: org.apiKey });
      expect(deals.body.meta.total).toBe(VALID);
      const contacts = await s.api('/contacts?limit=1', { key: org.apiKey });
      expect(contacts.body.meta.total).toBe(VALID / 10);
      const won = await s.api('/deals?lifecycle_stage=customer&limit=1', { key: org.apiKey });
      expect(won.body.meta.total).toBe(VALID / 2);
      // The newest deal is the last row, with its own date (and its activity dated then too).
      const newest = deals.body.data[0];
      expect(newest).toMatchObject({
        title: `Imported ${VALID - 1}`,
        stage_name: 'Qualified',
        created_at: new Date(Date.UTC(2025, 0, 1) + (VALID - 1) * 60_000).toISOString(),
      });
      const detail = await s.api(`/deals/${newest.id}`, { key: org.apiKey });
      expect(detail.body.data.recent_activities[0]).toMatchObject({
        type: 'deal_created',
        created_at: newest.created_at,
      });
      const [counted] = await s.sql<{ deals: string | number; activities: string | number }>(
        `select (select count(*) from deals where org_id = ?) as deals,
                (select count(*) from activities where org_id = ?) as activities`,
        [org.orgId, org.orgId],
      );
      expect(Number(counted?.deals)).toBe(VALID);
      expect(Number(counted?.activities)).toBe(VALID + VALID / 10);
    }, 120_000);

    it('imports custom values checked as the API checks them: a bad one rejects its row, naming custom.<key>', async () => {
      // An organization of its own: the other tests count this one's deals.
      const own = await s.newOrg('Custom importer');
      const field = await s.api('/custom-fields/deals', {
        method: 'POST',
        key: own.apiKey,
        json: {
          key: 'import_tier',
          type: 'select',
          indexed: true,
          options: [{ value: 'gold' }, { value: 'silver' }],
        },
      });
      expect(field.status, field.text).toBe(201);
      const file = path.join(dir, 'custom.ndjson');
      await writeFile(
        file,
        [
          { title: 'Gold import', custom: { import_tier: 'gold' } },
          { title: 'Bronze import', custom: { import_tier: 'bronze' } },
          { title: 'Typo import', custom: { import_teir: 'gold' } },
        ]
          .map((row) => JSON.stringify(row))
          .join('\n'),
      );
      const result = await crm({ LOG_LEVEL: 'silent', ...dbEnv }, 'import', file, '--org', own.orgId);
      expect(result.code, result.stderr).toBe(0);
      expect(result.lines[0]).toMatchObject({ imported: 1, rejected: 2 });
      const rejects = (await readFile(`${file}.rejected.ndjson`, 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { line: number; error: string });
      expect(rejects.map((r) => [r.line, r.error])).toEqual([
        [2, 'custom.import_tier: must be one of "gold", "silver"'],
        [3, expect.stringMatching(/^custom\.import_teir: unknown field; did you mean "import_tier"\?/)],
      ]);
      const found = await s.api('/search?q=Gold%20import', { key: own.apiKey });
      const id = found.body.data.deals[0].id;
      expect((await s.api(`/deals/${id}`, { key: own.apiKey })).body.data.deal.custom).toEqual({
        import_tier: 'gold',
      });
      // The field is indexed: the imported value is in its index, as a create's is (the same trigger).
      const rows = await s.sql<{ key: string; value_text: string; record_id: string }>(
        'select key, value_text, record_id from custom_indexed_values where org_id = ?',
        [own.orgId],
      );
      expect(rows).toEqual([{ key: 'import_tier', value_text: 'gold', record_id: id }]);
    });

    it('emits a deal.created event per imported deal, seen in the event feed as any other create', async () => {
      let total = 0;
      for (let attempt = 0; attempt < 100 && total < VALID; attempt++) {
        const res = await s.api('/events?types=deal.created&limit=100', { key: org.apiKey });
        expect(res.status).toBe(200);
        total = 0;
        let after: string | null = null;
        do {
          const page = await s.api(`/events?types=deal.created&limit=100${after ? `&after=${after}` : ''}`, {
            key: org.apiKey,
          });
          total += page.body.data.length;
          after = page.body.meta.has_more ? page.body.meta.next_cursor : null;
        } while (after);
        if (total < VALID) await new Promise((r) => setTimeout(r, 200));
      }
      expect(total).toBe(VALID);
      // Its field history starts at its creation, from that event (docs/api/history.md).
      const [deal] = (await s.api('/deals?limit=1', { key: org.apiKey })).body.data;
      const history = await s.api(`/deals/${deal.id}/history?field=title`, { key: org.apiKey });
      expect(history.body.data).toEqual([
        expect.objectContaining({ value: deal.title, from: deal.created_at, until: null }),
      ]);
      const event = await s.api(`/events/${history.body.data[0].event_id}`, { key: org.apiKey });
      expect(event.body.data).toMatchObject({ type: 'deal.created', data: { id: deal.id } });
    }, 120_000);

    it('writes a chunk whose rows need more than the 65,535 parameters one statement may take', async () => {
      const many = await s.newOrg('Many contacts');
      const contacts = Array.from({ length: 20 }, (_, k) => ({ name: `Contact ${k}` }));
      const file = path.join(dir, 'many.ndjson');
      // 400 deals × 20 contacts: 8,400 activities × 8 columns in one chunk.
      await writeFile(
        file,
        Array.from({ length: 400 }, (_, i) => JSON.stringify({ title: `Wide ${i}`, contacts })).join('\n'),
      );
      const result = await crm({ LOG_LEVEL: 'silent', ...dbEnv }, 'import', file, '--org', many.orgId);
      expect(result.stderr).toBe('');
      expect(result.lines[0]).toMatchObject({ imported: 400, rejected: 0 });
      expect((await s.api('/contacts?limit=1', { key: many.apiKey })).body.meta.total).toBe(8_000);
    }, 60_000);

    it('imports companies and activities (--object), and upserts deals and companies on a unique field (--upsert-on)', async () => {
      const own = await s.newOrg('Graph importer');
      const call = (p: string, init: Parameters<TestServer['api']>[1] = {}) =>
        s.api(p, { key: own.apiKey, ...init });
      const run = (file: string, ...more: string[]) =>
        crm({ LOG_LEVEL: 'silent', ...dbEnv }, 'import', file, '--org', own.orgId, ...more);
      for (const [object, key] of [
        ['companies', 'duns'],
        ['deals', 'sf_id'],
      ])
        expect(
          (
            await call(`/custom-fields/${object}`, {
              method: 'POST',
              json: { key, type: 'text', unique: true },
            })
          ).status,
        ).toBe(201);
      const held = (
        await call('/companies', { method: 'POST', json: { name: 'Acme', custom: { duns: 'D-1' } } })
      ).body.data;
      await call('/companies', { method: 'POST', json: { name: 'Taken', domain: 'taken.test' } });

      // Companies: a row the schema refuses and one the database refuses (a held domain) are rejected
      // with their line; the others commit; one row updates the company holding its value.
      const companies = path.join(dir, 'companies.ndjson');
      await writeFile(
        companies,
        [
          { name: 'Acme Corporation', industry: 'Tools', custom: { duns: 'D-1' } },
          { name: 'Globex', domain: 'globex.test', custom: { duns: 'D-2' } },
          { domain: 'nameless.test' },
          { name: 'Copycat', domain: 'taken.test' },
        ]
          .map((r) => JSON.stringify(r))
          .join('\n'),
      );
      const imported = await run(companies, '--object', 'companies', '--upsert-on', 'duns');
      expect(imported.code, imported.stderr).toBe(0);
      expect(imported.lines[0]).toMatchObject({
        object: 'companies',
        read: 4,
        imported: 2,
        created: 1,
        updated: 1,
        rejected: 2,
      });
      const rejects = (await readFile(`${companies}.rejected.ndjson`, 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(rejects.map((r) => [r.line, r.error.split(':')[0]])).toEqual([
        [3, 'name'],
        [4, 'domain'],
      ]);
      expect((await call(`/companies/${held.id}`)).body.data).toMatchObject({
        name: 'Acme Corporation',
        industry: 'Tools',
      });
      const companyEvents = await call('/events?types=company.created,company.updated');
      expect(companyEvents.body.data.map((e: { type: string }) => e.type).sort()).toEqual([
        'company.created',
        'company.created',
        'company.created',
        'company.updated',
      ]);
      const globex = (await call('/companies?q=Globex')).body.data.find(
        (c: { name: string }) => c.name === 'Globex',
      );

      // Deals upserted: a held value updates its deal (its stage only when the row names one), a new
      // one is created, and a second row of that new value updates the first's deal.
      const deal = (
        await call('/deals', { method: 'POST', json: { title: 'Old', custom: { sf_id: 'S-1' } } })
      ).body.data;
      const deals = path.join(dir, 'upsert-deals.ndjson');
      await writeFile(
        deals,
        [
          { title: 'Renamed', value: 10, custom: { sf_id: 'S-1' } },
          { title: 'New one', stage: 'Proposal', custom: { sf_id: 'S-2' } },
          { title: 'New one, again', custom: { sf_id: 'S-2' } },
        ]
          .map((r) => JSON.stringify(r))
          .join('\n'),
      );
      const upserted = await run(deals, '--upsert-on', 'sf_id');
      expect(upserted.code, upserted.stderr).toBe(0);
      expect(upserted.lines[0]).toMatchObject({ imported: 3, created: 1, updated: 2, rejected: 0 });
      const listed = (await call('/deals')).body;
      expect(listed.meta.total).toBe(2);
      expect((await call(`/deals/${deal.id}`)).body.data.deal).toMatchObject({
        title: 'Renamed',
        value: 10,
        stage_name: deal.stage_name,
      });
      const fresh = listed.data.find((d: { id: string }) => d.id !== deal.id);
      expect(fresh).toMatchObject({ title: 'New one, again', stage_name: 'Proposal' });
      const notUnique = await run(deals, '--upsert-on', 'nope');
      expect(notUnique.code).toBe(1);
      expect(notUnique.stderr).toContain('--upsert-on: "nope" is not a unique custom field of deals');

      // Activities from CSV: links.<type> columns of ids; a link outside the organization rejects its row.
      const activities = path.join(dir, 'activities.csv');
      await writeFile(
        activities,
        [
          'type,subject,occurred_at,links.deal,links.company,participants',
          `call,Discovery call,2026-11-20T15:00:00Z,${deal.id} ${fresh.id},${globex.id},`,
          `note,Stray note,,${UUID_ELSEWHERE},,`,
          'meeting,,,,,',
        ].join('\n'),
      );
      const logged = await run(activities, '--object', 'activities');
      expect(logged.code, logged.stderr).toBe(0);
      expect(logged.lines[0]).toMatchObject({ read: 3, imported: 1, created: 1, rejected: 2 });
      const activityRejects = (await readFile(`${activities}.rejected.ndjson`, 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(activityRejects.map((r) => [r.line, r.error.split(':')[0]])).toEqual([
        [3, 'links[0].id'],
        [4, 'subject'],
      ]);
      const timeline = await call(`/activities?deal_id=${fresh.id}`);
      expect(timeline.body.data).toEqual([
        expect.objectContaining({
          type: 'call',
          subject: 'Discovery call',
          occurred_at: '2026-11-20T15:00:00.000Z',
        }),
      ]);
      expect((await call('/events?types=activity.created')).body.data).toHaveLength(1);
      // Contacts: each on its deal (a deal elsewhere names deal_id), by POST /contacts' own code.
      const people = path.join(dir, 'contacts.ndjson');
      await writeFile(
        people,
        [
          { deal_id: fresh.id, name: 'Jane Roe', role_type: 'champion' },
          { deal_id: UUID_ELSEWHERE, name: 'Nobody' },
        ]
          .map((r) => JSON.stringify(r))
          .join('\n'),
      );
      const added = await run(people, '--object', 'contacts');
      expect(added.lines[0]).toMatchObject({ imported: 1, rejected: 1 });
      expect(JSON.parse((await readFile(`${people}.rejected.ndjson`, 'utf8')).trim())).toMatchObject({
        line: 2,
        error: 'deal_id: no such deal in the organization',
      });
      expect((await call(`/deals/${fresh.id}`)).body.data.stakeholders).toEqual([
        expect.objectContaining({ name: 'Jane Roe', role_type: 'champion' }),
      ]);
      const refused = await run(activities, '--object', 'activities', '--upsert-on', 'x');
      expect(refused.stderr).toContain('--upsert-on: activities have no custom fields');
    }, 60_000);

    it('reads CSV with a contact per row from contact.* columns, and names each rejected record by its first line', async () => {
      const file = path.join(dir, 'deals.csv');
      // Windows line ends, as spreadsheets save them, a cell over two lines and a blank line: the rejects
      // still name the lines an editor shows.
      await writeFile(
        file,
        [
          'title,company_name,value,stage,expected_close_date,contact.name,contact.email,contact.role_type,notes',
          'CSV one,"Acme, Inc.",1200.50,Proposal,2027-01-15T00:00:00Z,Jane Doe,jane@acme.test,economic_buyer,"Met at the fair,',
          'follow up in March"',
          '',
          'CSV two,,,,,,,,',
          'CSV three,Globex,lots,,,,,,', // line 6
          'CSV four,Acme, Inc.,1,,,,,,', // line 7: an unquoted comma, one field too many
          'CSV five,Initech,2,,,,,,',
          '"CSV six,unclosed,3,,,,,,', // line 9
        ].join('\r\n'),
      );
      const result = await importFile(file, '--rejects', path.join(dir, 'csv-rejects.ndjson'));
      expect(result.code).toBe(0);
      expect(result.lines[0]).toMatchObject({ read: 6, imported: 3, rejected: 3 });
      const rejects = (await readFile(path.join(dir, 'csv-rejects.ndjson'), 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(rejects[0]).toMatchObject({ line: 6, error: 'value: expected number, got string' });
      expect(rejects[1]).toMatchObject({ line: 7 });
      expect(rejects[1].error).toMatch(/Invalid Record Length/i);
      expect(rejects[2]).toMatchObject({ line: 9 });
      expect(rejects[2].error).toMatch(/quote/i);
      const found = await s.api('/search?q=CSV%20one', { key: org.apiKey });
      const id = found.body.data.deals?.[0]?.id ?? found.body.data[0]?.id;
      const detail = await s.api(`/deals/${id}`, { key: org.apiKey });
      expect(detail.body.data.deal).toMatchObject({
        title: 'CSV one',
        company_name: 'Acme, Inc.',
        value: 1200.5,
        stage_name: 'Proposal',
        notes: 'Met at the fair,\r\nfollow up in March',
      });
      expect(detail.body.data.stakeholders).toEqual([
        expect.objectContaining({ name: 'Jane Doe', email: 'jane@acme.test', role_type: 'economic_buyer' }),
      ]);
    }, 60_000);

    it('rejects a row whose bytes are not UTF-8, naming the line and column of the first, and imports the others', async () => {
      const mixed = await s.newOrg('Encodings');
      const run = (file: string) =>
        crm({ LOG_LEVEL: 'silent', ...dbEnv }, 'import', file, '--org', mixed.orgId);
      const rejectsOf = async (file: string) =>
        (await readFile(`${file}.rejected.ndjson`, 'utf8'))
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l));
      const latin1 = (text: string) => Buffer.from(text, 'latin1'); // é is the one byte 0xE9, not UTF-8

      const ndjson = path.join(dir, 'encodings.ndjson');
      await writeFile(
        ndjson,
        Buffer.concat([
          Buffer.from(`${JSON.stringify({ title: 'NDJSON café' })}\n`),
          latin1(`${JSON.stringify({ title: 'NDJSON Latin-1 café' })}\n`), // line 2, é at byte 29
          Buffer.from(`${JSON.stringify({ title: 'NDJSON \uFFFD as written' })}\n`), // U+FFFD itself is text
        ]),
      );
      const fromNdjson = await run(ndjson);
      expect(fromNdjson.code).toBe(0);
      expect(fromNdjson.lines[0]).toMatchObject({ read: 3, imported: 2, rejected: 1 });
      expect(await rejectsOf(ndjson)).toEqual([
        {
          line: 2,
          error: 'not UTF-8: byte 0xE9 at line 2, column 29 (the column counts bytes)',
          row: '{"title":"NDJSON Latin-1 caf\uFFFD"}',
        },
      ]);

      // The record of lines 3-4 has its bad byte on line 4: the reject is the record's first line, the
      // error names where the byte is.
      const csv = path.join(dir, 'encodings.csv');
      await writeFile(
        csv,
        Buffer.concat([
          Buffer.from('title,notes\r\nCSV café,fine\r\n'),
          latin1('CSV Latin-1,"first line\r\nsecond, café"\r\n'),
          Buffer.from('CSV after,fine'),
        ]),
      );
      const fromCsv = await run(csv);
      expect(fromCsv.code).toBe(0);
      expect(fromCsv.lines[0]).toMatchObject({ read: 3, imported: 2, rejected: 1 });
      expect(await rejectsOf(csv)).toMatchObject([
        { line: 3, error: 'not UTF-8: byte 0xE9 at line 4, column 12 (the column counts bytes)' },
      ]);

      const deals = await s.api('/deals?limit=10', { key: mixed.apiKey });
      expect(deals.body.data.map((d: { title: string }) => d.title).sort()).toEqual([
        'CSV after',
        'CSV café',
        'NDJSON café',
        'NDJSON \uFFFD as written',
      ]);

      // A header that is not UTF-8 names no column surely: nothing is imported.
      const header = path.join(dir, 'header.csv');
      await writeFile(header, Buffer.concat([latin1('title,café\n'), Buffer.from('Never,x\n')]));
      const fromHeader = await run(header);
      expect(fromHeader.code).toBe(1);
      expect(fromHeader.stderr).toContain(
        `error: ${header}: the header is not UTF-8: byte 0xE9 at line 1, column 10 (the column counts bytes)`,
      );
      expect((await s.api('/deals?limit=1', { key: mixed.apiKey })).body.meta.total).toBe(4);
    }, 60_000);

    it('refuses an unknown organization or file with one line and exit 1, writing nothing', async () => {
      const before = (await s.api('/deals?limit=1', { key: org.apiKey })).body.meta.total;
      const noOrg = await crm(
        { LOG_LEVEL: 'silent', ...dbEnv },
        'import',
        path.join(dir, 'deals.csv'),
        '--org',
        '01890a5d-ac96-774b-bcce-b302099a8057',
      );
      expect(noOrg.code).toBe(1);
      expect(noOrg.stderr).toBe('error: organization 01890a5d-ac96-774b-bcce-b302099a8057 does not exist\n');
      const noFile = await importFile(path.join(dir, 'missing.ndjson'));
      expect(noFile.code).toBe(1);
      expect(noFile.stderr).toMatch(/^error: cannot read .*missing\.ndjson: ENOENT/);
      const wrongKind = await importFile(path.join(dir, 'deals.xlsx'));
      expect(wrongKind.stderr).toMatch(/give a \.csv, \.ndjson or \.jsonl file/);
      // A rejects file that cannot be written stops the import, saying what committed (nothing yet here).
      const stuck = await importFile(
        path.join(dir, 'deals.ndjson'),
        '--rejects',
        path.join(dir, 'no/such/dir.ndjson'),
      );
      expect(stuck.code).toBe(1);
      expect(stuck.stderr).toMatch(
        /^error: cannot write the rejects file .*no\/such\/dir\.ndjson: ENOENT.* \(the import stopped: 0 deals committed, none of its lines;/,
      );
      expect((await s.api('/deals?limit=1', { key: org.apiKey })).body.meta.total).toBe(before);
    }, 60_000);

    it('finds a relative path where `npm run crm` was called from (INIT_CWD), not in the checkout', async () => {
      const callers = await mkdtemp(path.join(tmpdir(), 'crm-caller-'));
      try {
        await writeFile(
          path.join(callers, 'mine.ndjson'),
          `${JSON.stringify({ title: 'From the caller dir' })}\n`,
        );
        // As npm runs it: in the checkout, with the caller's directory in INIT_CWD.
        const { code, stderr } = await crmProcess(['import', 'mine.ndjson', '--org', org.orgId], {
          env: { ...process.env, LOG_LEVEL: 'silent', ...dbEnv, INIT_CWD: callers },
        });
        expect(code, stderr).toBe(0);
        const found = await s.api(`/search?q=${encodeURIComponent('From the caller')}`, { key: org.apiKey });
        expect(found.body.data.deals).toHaveLength(1);
      } finally {
        await rm(callers, { recursive: true, force: true });
      }
    }, 60_000);
  });
}
