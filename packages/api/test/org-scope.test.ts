import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Database, ORG_FILTER, openDatabase } from '@crm/db';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
    db = await openDatabase({ kind: 'pglite', dataDir: 'memory://' }, 'test');
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
 * The request paths' SQL goes through the scoped builder: no feature writes `org_id = ?` by hand, and raw
 * SQL stays only in the files listed here, each for its reason (none of them reads one organization's rows
 * on a request).
 */
describe('organization scope of the features’ SQL (source)', () => {
  const features = fileURLToPath(new URL('../src/features', import.meta.url));
  const RAW_SQL_ALLOWED: Record<string, string> = {
    'ai/kept-analytics.ts': 'hourly upkeep across every organization (fold and prune the kept sums)',
    'deals/deal-import.ts': 'folds the kept sums and vacuums the tables after an import',
    'events/event-feed.service.ts': 'the sequencer numbers every organization’s events in one order',
  };
  const sources = readdirSync(features, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => ({ file: f.split(path.sep).join('/'), text: readFileSync(path.join(features, f), 'utf8') }));

  it('binds no organization by hand', () => {
    expect(sources.length).toBeGreaterThan(20);
    const byHand = sources
      .filter(({ text }) => /org_id\s*=\s*(\?|\$\d)|orgRows\(/.test(text))
      .map((s) => s.file);
    expect(byHand).toEqual([]);
  });

  it('runs raw SQL only where listed, for the reason given', () => {
    const raw = sources
      .filter(({ text }) => /\.execute(<[^>]*>)?\(\s*[`'"]|CompiledQuery\.raw\(/.test(text))
      .map((s) => s.file)
      .sort();
    expect(raw).toEqual(Object.keys(RAW_SQL_ALLOWED).sort());
  });
});
