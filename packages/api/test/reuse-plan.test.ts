import { randomBytes } from 'node:crypto';
import { type Database, ORG_FILTER, openDatabase, transaction } from '@crm/db';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryDealDetail } from '../src/features/deals/deal.queries.ts';
import { search } from '../src/features/search/search.service.ts';
import { createOrganizationWithKey } from '../src/index.ts';

const ADMIN_URL = process.env.TEST_DATABASE_URL;

/**
 * A statement given `reusePlan` runs as a named prepared statement on PostgreSQL: parsed and planned once
 * per connection (README, Benchmark). Its answers are those of every other test of the same call; here,
 * that PostgreSQL keeps it, and only it.
 */
describe.skipIf(!ADMIN_URL)(
  `statements PostgreSQL keeps prepared${ADMIN_URL ? '' : ' (skipped: TEST_DATABASE_URL is not set)'}`,
  () => {
    const name = `crm_plan_${randomBytes(4).toString('hex')}`;
    let admin: pg.Client;
    let db: Database;
    let orgId: string;

    beforeAll(async () => {
      admin = new pg.Client({ connectionString: ADMIN_URL });
      await admin.connect();
      await admin.query(`create database ${name}`);
      const url = new URL(ADMIN_URL as string);
      url.pathname = `/${name}`;
      db = await openDatabase(
        {
          kind: 'postgresql',
          url: url.toString(),
          poolMax: 2,
          connectTimeoutMs: 10_000,
          queryTimeoutMs: 10_000,
        },
        'test',
      );
      orgId = (await createOrganizationWithKey(db.orm.em.fork(), 'Plans')).org_id;
    });
    afterAll(async () => {
      await db?.close();
      await admin?.query(`drop database if exists ${name} with (force)`);
      await admin?.end();
    });

    it("keeps a deal's detail prepared on the connection, and not a search", async () => {
      const em = db.orm.em.fork();
      em.setFilterParams(ORG_FILTER, { orgId });
      const missing = '0195f3a2-7c1e-7b3a-9f10-2d4e6a8c0b12';
      // One transaction: one connection, whose prepared statements the view lists.
      const prepared = await transaction(em, async (tx) => {
        expect(await queryDealDetail(tx, missing, 5)).toBeUndefined();
        expect(await queryDealDetail(tx, missing, 5)).toBeUndefined();
        await search(tx, 'acme', { plainUpTo: 50_000, newestWindow: 2_000 });
        return tx.execute<{ name: string; statement: string }[]>(
          'select name, statement from pg_prepared_statements',
        );
      });
      const detail = prepared.filter((p) => p.statement.includes('recent_activities'));
      expect(detail).toHaveLength(1);
      expect(detail[0]?.name).toMatch(/^crm_[0-9a-f]{20}$/);
      expect(prepared.some((p) => p.statement.includes('ilike'))).toBe(false);
    });
  },
);
