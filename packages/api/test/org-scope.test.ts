import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as dbModule from '@crm/db';
import { type Database, ORG_FILTER, openDatabase } from '@crm/db';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migratedImage } from '../../db/test/embedded-image.ts';
import { createOrganizationWithKey } from '../src/index.ts';
import { orgDb, orgQuery, TENANT_TABLES, UNSCOPED_TABLES } from '../src/org-scope.ts';
import { prepareQuery } from '../src/prepared-query.ts';

/** The organization-scoped builder adds `org_id = <organization>` itself, wherever a tenant table is read. */
describe('orgDb, the organization-scoped query builder (embedded database)', () => {
  let db: Database;
  let orgA: string;
  let orgB: string;
  const scopedTo = (orgId: string) => {
    const em = db.orm.em.fork();
    em.setFilterParams(ORG_FILTER, { orgId });
    return em;
  };

  beforeAll(async () => {
    db = await openDatabase({ kind: 'pglite', dataDir: 'memory://', image: migratedImage() }, 'test');
    const em = db.orm.em.fork();
    orgA = (await createOrganizationWithKey(em, 'A')).org_id;
    orgB = (await createOrganizationWithKey(em, 'B')).org_id;
  });
  afterAll(async () => {
    await db?.close();
  });

  it('knows every table with an org_id column, and every other table is listed as unscoped on purpose', async () => {
    const rows = await db.orm.em.fork().execute<{ table_name: string; scoped: boolean }[]>(
      `select t.table_name, exists (select 1 from information_schema.columns c where c.table_schema = 'public'
                and c.table_name = t.table_name and c.column_name = 'org_id') as scoped
         from information_schema.tables t where t.table_schema = 'public' and t.table_type = 'BASE TABLE' order by 1`,
    );
    expect([...TENANT_TABLES].sort()).toEqual(rows.filter((r) => r.scoped).map((r) => r.table_name));
    expect([...UNSCOPED_TABLES].sort()).toEqual(rows.filter((r) => !r.scoped).map((r) => r.table_name));
  });

  it('scopes the FROM, each join and each subquery, by alias', () => {
    const query = orgDb(scopedTo(orgA))
      .selectFrom('deals as d')
      .innerJoin('pipeline_stages as s', 's.id', 'd.stage_id')
      .select(['d.id', 's.name'])
      .where('d.id', 'in', (eb) => eb.selectFrom('contacts').select('deal_id'))
      .compile();
    expect(query.sql).toBe(
      'select "d"."id", "s"."name" from "deals" as "d" inner join "pipeline_stages" as "s" on ("s"."id" = "d"."stage_id") and "s"."org_id" = $1 where ("d"."id" in (select "deal_id" from "contacts" where "contacts"."org_id" = $2)) and "d"."org_id" = $3',
    );
    expect(query.parameters).toEqual([orgA, orgA, orgA]);
  });

  it('keeps a raw OR on its side of the scope, and scopes UPDATE … FROM and DELETE … USING', () => {
    const a = orgDb(scopedTo(orgA));
    const or = a
      .selectFrom('deals')
      .select('id')
      .where(sql<boolean>`title ilike ${'%x%'} or notes ilike ${'%x%'}`)
      .compile();
    expect(or.sql).toBe(
      'select "id" from "deals" where (title ilike $1 or notes ilike $2) and "deals"."org_id" = $3',
    );
    const update = a
      .updateTable('deals')
      .from('pipeline_stages as s')
      .set({ title: 'x' })
      .whereRef('s.id', '=', 'deals.stage_id')
      .compile();
    expect(update.sql).toContain('and "deals"."org_id" = $2) and "s"."org_id" = $3');
    const remove = a
      .deleteFrom('contacts')
      .using('deals as d')
      .whereRef('d.id', '=', 'contacts.deal_id')
      .compile();
    expect(remove.sql).toContain('"contacts"."org_id" = $1) and "d"."org_id" = $2');
  });

  it('refuses what it cannot scope instead of running it unscoped', () => {
    const a = orgDb(scopedTo(orgA));
    expect(() =>
      a
        .selectFrom('pipelines as p')
        .rightJoin('deals as d', 'd.pipeline_id', 'p.id')
        .select('d.id')
        .compile(),
    ).toThrow(/cannot scope a RightJoin of d/);
    expect(() => a.selectFrom(sql`deals`.as('d')).select(sql`1`.as('one')).compile()).toThrow(
      /cannot scope a RawNode/,
    );
    expect(() =>
      a
        .insertInto('webhook_endpoints')
        .values({ id: 'x', org_id: orgB } as never)
        .compile(),
    ).toThrow(/inserts set org_id themselves/);
  });

  it('reads, updates and deletes only the caller organization’s rows', async () => {
    for (const org of [orgA, orgB])
      await db.orm.em.fork().execute(
        `insert into webhook_endpoints (id, org_id, url, events, secret, is_active, failure_count, created_at)
           values (gen_random_uuid(), ?, 'https://example.com/hook', array['deal.created'], 'sealed', true, 0, now())`,
        [org],
      );
    const a = orgDb(scopedTo(orgA));
    const seen = await a.selectFrom('webhook_endpoints').select('org_id').execute();
    expect(seen).toEqual([{ org_id: orgA }]);
    const updated = await a
      .updateTable('webhook_endpoints')
      .set({ failure_count: 7 })
      .returning('org_id')
      .execute();
    expect(updated).toEqual([{ org_id: orgA }]);
    const deleted = await a.deleteFrom('webhook_endpoints').returning('org_id').execute();
    expect(deleted).toEqual([{ org_id: orgA }]);
    const left = await db.orm.em
      .fork()
      .execute<{ org_id: string; failure_count: number }[]>(
        'select org_id, failure_count from webhook_endpoints',
      );
    expect(left).toEqual([{ org_id: orgB, failure_count: 0 }]);
    // A select of raw expressions only is scoped by its FROM all the same.
    expect(a.selectFrom('deals').select(sql<number>`1`.as('one')).compile().sql).toContain(
      '"deals"."org_id" = $1',
    );
  });

  it('refuses to run without an organization in the unit of work', () => {
    expect(() => orgDb(db.orm.em.fork())).toThrow(/no organization/);
  });

  it('orgQuery: compiled once per shape, each call binds its own organization and arguments', async () => {
    for (const [org, url] of [
      [orgA, 'https://a.example/one'],
      [orgA, 'https://a.example/two'],
      [orgB, 'https://b.example/one'],
    ] as const)
      await db.orm.em.fork().execute(
        `insert into webhook_endpoints (id, org_id, url, events, secret, is_active, failure_count, created_at)
           values (gen_random_uuid(), ?, ?, array['deal.created'], 'sealed', true, 0, now())`,
        [org, url],
      );
    let compiled = 0;
    const endpoints = orgQuery((db, a: { url?: string; limit: number }) => {
      compiled++;
      let q = db.selectFrom('webhook_endpoints as w').select('w.url').orderBy('w.url').limit(a.limit);
      if (a.url) q = q.where('w.url', '=', a.url);
      return q;
    });
    expect(await endpoints(scopedTo(orgA), { limit: 10 })).toEqual([
      { url: 'https://a.example/one' },
      { url: 'https://a.example/two' },
    ]);
    // (B's endpoint from the test above is still there.)
    expect(await endpoints(scopedTo(orgB), { limit: 10 })).toEqual([
      { url: 'https://b.example/one' },
      { url: 'https://example.com/hook' },
    ]);
    expect(await endpoints(scopedTo(orgA), { limit: 1 })).toEqual([{ url: 'https://a.example/one' }]);
    expect(compiled).toBe(1);
    // A given filter is another shape; left out (undefined), the first one again.
    expect(await endpoints(scopedTo(orgA), { url: 'https://a.example/two', limit: 10 })).toEqual([
      { url: 'https://a.example/two' },
    ]);
    expect(await endpoints(scopedTo(orgB), { url: 'https://a.example/two', limit: 10 })).toEqual([]);
    expect(await endpoints(scopedTo(orgA), { url: undefined, limit: 10 })).toHaveLength(2);
    expect(compiled).toBe(2);
  });

  it('orgQuery: refuses a value that is neither an argument nor the organization (it would be kept for every call)', async () => {
    let captured = 'https://a.example/one';
    const frozen = orgQuery((db, a: { limit: number }) =>
      db.selectFrom('webhook_endpoints').select('url').where('url', '=', captured).limit(a.limit),
    );
    await expect(frozen(scopedTo(orgA), { limit: 1 })).rejects.toThrow(
      /orgQuery: the parameter "https:\/\/a.example\/one" is not an argument/,
    );
    captured = 'changed';
    // Without an organization marker (an insert's statement) a captured undefined is refused all the same.
    const missing: string | undefined = undefined;
    const unscoped = prepareQuery('unscoped', (db, a: { limit: number }) =>
      db
        .selectFrom('webhook_endpoints')
        .select('url')
        .where('url', '=', missing as never)
        .limit(a.limit),
    );
    await expect(unscoped(scopedTo(orgA), { limit: 1 })).rejects.toThrow(/unscoped: the parameter undefined/);
    // A constant written as SQL text is no parameter.
    const constant = orgQuery((db, a: { limit: number }) =>
      db.selectFrom('webhook_endpoints').select('url').where('is_active', '=', sql.lit(true)).limit(a.limit),
    );
    expect(await constant(scopedTo(orgB), { limit: 5 })).toHaveLength(2);
    await expect(orgQuery((db) => db.selectFrom('deals').select('id'))(db.orm.em.fork(), {})).rejects.toThrow(
      /no organization/,
    );
  });
});

/**
 * Every SQL statement of the service (packages/api/src: features, admin and its CLI, limits, MCP, the
 * request's own machinery) goes through the organization's scope: reads, updates and deletes through the
 * scoped builder (`orgDb`/`orgQuery`), or the ORM on an entity its filter scopes; inserts name their
 * organization; and what crosses organizations by nature goes through the one unscoped door, `unscopedDb`,
 * each use listed here with its reason. Nothing binds an organization by hand, nor takes an optional one
 * that means every organization when left out.
 */
describe('organization scope of the service’s SQL (source)', () => {
  const root = fileURLToPath(new URL('../src', import.meta.url));
  /** Where the builders and the door are made: the one place their unscoped builder is named. */
  const MACHINERY = new Set(['org-scope.ts', 'prepared-query.ts']);
  const RAW_SQL_ALLOWED: Record<string, string> = {
    'admin/organizations.ts': 'deleting an organization sets the analytics triggers aside for its cascade',
    'admin/people.ts':
      'better-auth’s accounts and sessions (no org_id, no typed schema), by a person found scoped',
    'features/ai/kept-analytics.ts': 'hourly upkeep across every organization (fold and prune the kept sums)',
    'features/custom-fields/custom-fields.service.ts':
      'a schema change locks its object’s records while it checks them',
    'features/deals/deal-import.ts': 'folds the kept sums and vacuums the tables after an import',
    'idempotency.ts': 'idempotency records belong to an API key (no org_id): stored and replayed by key',
    'limits/usage-store.ts': 'the usage flush upserts every organization’s counts, one statement a table',
    'sequencer.ts':
      'the sequencer numbers every organization’s events and changed records in one order, purges old tombstones',
  };
  /** Every use of the unscoped door, by file, with the reason its call gives. */
  const UNSCOPED_USES: Array<[file: string, reason: string]> = [
    ['admin/api-keys.ts', 'authentication: a key is found by its hash, before its organization is known'],
    ['admin/api-keys.ts', 'crm key list without --org: every organization’s keys'],
    ['admin/cli/commands.ts', 'the CLI names a key or a person by its id alone: whose it is'],
    [
      'admin/dashboard-auth.ts',
      'sign-in: better-auth finds a person by e-mail and a session by its cookie, before any organization',
    ],
    ['admin/dashboard-auth.ts', 'the server’s own secret (server_secrets has no organization)'],
    ['admin/invitations.ts', 'an invitation link is accepted before anyone signs in: found by its token'],
    ['admin/invitations.ts', 'an invitation link is opened before anyone signs in: found by its token'],
    ['admin/organizations.ts', 'crm org delete: the organization itself (its rows cascade)'],
    ['admin/organizations.ts', 'crm org list: every organization'],
    ['admin/organizations.ts', 'first start: whether any organization exists yet'],
    [
      'admin/organizations.ts',
      'whether the organization a caller names exists (organizations has no org_id)',
    ],
    ['admin/people.ts', 'an e-mail signs in to one account, whatever its organization'],
    ['admin/people.ts', 'crm user list without --org: every organization’s people'],
    ['limits/usage-store.ts', 'the usage flush adds up every organization’s counted calls in one statement'],
  ];
  const sources = readdirSync(root, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => ({ file: f.split(path.sep).join('/'), text: readFileSync(path.join(root, f), 'utf8') }));
  const code = sources.filter((s) => !MACHINERY.has(s.file));
  /** `file:line: text` of each match of `pattern` (global) in the code. */
  const matches = (pattern: RegExp, of = code) =>
    of.flatMap(({ file, text }) =>
      [...text.matchAll(pattern)].map((m) => {
        const line = text.slice(0, m.index).split('\n').length;
        return `${file}:${line}: ${m[0].replace(/\s+/g, ' ')}`;
      }),
    );

  it('reads every folder of the service', () => {
    for (const folder of ['admin/', 'admin/cli/', 'features/', 'limits/', 'mcp/'])
      expect(
        sources.some((s) => s.file.startsWith(folder)),
        folder,
      ).toBe(true);
    expect(sources.length).toBeGreaterThan(60);
  });

  it('binds no organization by hand: no org_id condition in SQL text, in the builder or through orgRows', () => {
    expect(matches(/org_id\s*=\s*(\?|\$\d|\$\{)/g, sources)).toEqual([]);
    expect(matches(/['"](\w+\.)?org_id['"]\s*,\s*['"](=|<>|!=|in|not in|is)['"]/g, sources)).toEqual([]);
    expect(matches(/orgRows\(/g, sources)).toEqual([]);
  });

  it('takes no optional organization that would mean every organization when left out', () => {
    expect(matches(/\w*[oO]rgId\?\s*:|\w*[oO]rgId\s*:\s*string\s*\|\s*undefined/g)).toEqual([]);
  });

  it('runs raw SQL only where listed, for the reason given', () => {
    const raw = code
      .filter(({ text }) => /\.execute(<[^>]*>)?\(\s*[`'"]|CompiledQuery\.raw\(|`\s*\.execute\(/.test(text))
      .map((s) => s.file)
      .sort();
    expect(raw).toEqual(Object.keys(RAW_SQL_ALLOWED).sort());
  });

  it('builds unscoped queries only to insert, whose rows name their organization', () => {
    // sqlOf, the builder without the scope: each use an insert, in the same expression.
    const sqlOfs = matches(/sqlOf\(/g);
    expect(sqlOfs.length).toBeGreaterThan(5);
    expect(matches(/sqlOf\((?![\w.]+(\(\))?\)\s*\.insertInto\()/g)).toEqual([]);
    // A statement compiled once without the scope (prepareQuery) is an insert too.
    expect(matches(/prepareQuery\(/g)).toHaveLength(1);
    expect(
      matches(
        /prepareQuery\(\s*'\w+',\s*\(db\b[^)]*\)\s*=>\s*db\s*(\.with\('\w+',\s*\(q\)\s*=>\s*q\.insertInto\([^)]*\)\.values\([^)]*\)\)\s*)*\.insertInto\(/g,
      ),
    ).toHaveLength(1);
    // Nor any other way to the connection.
    expect(matches(/getKysely\(|getConnection\(/g)).toEqual([]);
  });

  it('reads through the ORM only entities its organization filter scopes, with the filter on', () => {
    const entities = new Map(
      Object.entries(dbModule).flatMap(([name, value]) => {
        const meta = (value as { meta?: { tableName?: string; filters?: Record<string, unknown> } }).meta;
        return meta?.tableName ? [[name, meta.filters?.[ORG_FILTER] !== undefined] as const] : [];
      }),
    );
    expect(entities.get('Deal')).toBe(true);
    const reads = matches(
      /\.(find|findOne|findOneOrFail|findAll|findAndCount|findByCursor|count|countBy|nativeUpdate|nativeDelete|upsert|upsertMany|createQueryBuilder|qb|stream)\(\s*(\w+)/g,
    );
    expect(reads.length).toBeGreaterThan(5);
    const unscoped = reads.filter((read) => {
      const entity = /\(\s*(\w+)$/.exec(read)?.[1] ?? '';
      return entities.has(entity) && !entities.get(entity);
    });
    expect(unscoped).toEqual([]);
    // Nor with the filter turned off or given other parameters for one call.
    expect(matches(/\bfilters\s*:/g)).toEqual([]);
    // The organization is set on a unit of work by scopeToOrg alone.
    expect(matches(/setFilterParams\(|ORG_FILTER/g)).toEqual([]);
  });

  it('crosses organizations only through unscopedDb, each use listed with its reason', () => {
    const calls = matches(/unscopedDb\(/g);
    const uses = code.flatMap(({ file, text }) =>
      [...text.matchAll(/unscopedDb\(\s*[\w.]+(\(\))?,\s*(['"])((?:(?!\2).)*)\2,?\s*\)/gs)].map(
        (m) => [file, m[3]] as [string, string],
      ),
    );
    // Each call gives its reason as written text, so this list is the whole story.
    expect(uses).toHaveLength(calls.length);
    const order = (list: Array<[string, string]>) => list.map((u) => u.join(': ')).sort();
    expect(order(uses)).toEqual(order(UNSCOPED_USES));
  });
});
