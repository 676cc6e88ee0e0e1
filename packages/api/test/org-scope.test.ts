import { type Database, ORG_FILTER, openDatabase } from '@crm/db';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganizationWithKey } from '../src/index.ts';
import { orgDb, TENANT_TABLES } from '../src/org-scope.ts';

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

  it('knows every table with an org_id column', async () => {
    const rows = await db.orm.em
      .fork()
      .execute<{ table_name: string }[]>(
        "select table_name from information_schema.columns where column_name = 'org_id' and table_schema = 'public' order by 1",
      );
    expect([...TENANT_TABLES].sort()).toEqual(rows.map((r) => r.table_name));
  });

  it('scopes the FROM, each join and each subquery, by alias', () => {
    const query = orgDb(scopedTo(orgA))
      .selectFrom('deals as d')
      .innerJoin('pipeline_stages as s', 's.id', 'd.stage_id')
      .select(['d.id', 's.name'])
      .where('d.id', 'in', (eb) => eb.selectFrom('contacts').select('deal_id'))
      .compile();
    expect(query.sql).toBe(
      'select "d"."id", "s"."name" from "deals" as "d" inner join "pipeline_stages" as "s" on "s"."id" = "d"."stage_id" and "s"."org_id" = $1 where "d"."id" in (select "deal_id" from "contacts" where "contacts"."org_id" = $2) and "d"."org_id" = $3',
    );
    expect(query.parameters).toEqual([orgA, orgA, orgA]);
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
});
