import { randomBytes } from 'node:crypto';
import { type Database, ORG_FILTER, openDatabase, transaction } from '@crm/db';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuthedContext } from '../src/context.ts';
import { queryDealDetail } from '../src/features/deals/deal.queries.ts';
import { createDeal } from '../src/features/deals/deals.service.ts';
import { search } from '../src/features/search/search.service.ts';
import { createOrganizationWithKey } from '../src/index.ts';

const ADMIN_URL = process.env.TEST_DATABASE_URL;

/**
 * A statement given `reusePlan` runs as a named prepared statement on PostgreSQL: parsed and planned once
 * per connection (docs/development.md, What made the difference). Its answers are those of every other test of the same call; here,
 * that PostgreSQL keeps it, and only it.
 */
describe.skipIf(!ADMIN_URL)(
  `statements PostgreSQL keeps prepared${ADMIN_URL ? '' : ' (skipped: TEST_DATABASE_URL is not set)'}`,
  () => {
    const name = `crm_plan_${randomBytes(4).toString('hex')}`;
    let admin: pg.Client;
    let url = new URL('postgres://unset');
    let db: Database;
    let orgId: string;
    const open = (preparedStatements: boolean, parallelWorkers?: number) =>
      openDatabase(
        {
          kind: 'postgresql',
          url: url.toString(),
          // One connection: what one statement prepared, the next finds.
          poolMax: 1,
          connectTimeoutMs: 10_000,
          queryTimeoutMs: 10_000,
          preparedStatements,
          parallelWorkers,
        },
        'test',
      );
    const scoped = (database: Database) => {
      const em = database.orm.em.fork();
      em.setFilterParams(ORG_FILTER, { orgId });
      return em;
    };

    beforeAll(async () => {
      admin = new pg.Client({ connectionString: ADMIN_URL });
      await admin.connect();
      await admin.query(`create database ${name}`);
      url = new URL(ADMIN_URL as string);
      url.pathname = `/${name}`;
      db = await open(true);
      orgId = (await createOrganizationWithKey(db.orm.em.fork(), 'Plans')).org_id;
    });
    afterAll(async () => {
      await db?.close();
      await admin?.query(`drop database if exists ${name} with (force)`);
      await admin?.end();
    });

    it("keeps a deal's detail prepared on the connection, and not a search", async () => {
      const em = scoped(db);
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

    it('answers a deal through the prepared statement, and again after a migration changed a column it returns', async () => {
      const created = await createDeal({ principal: { orgId } } as AuthedContext, scoped(db), {
        title: 'Prepared deal',
        value: 1200,
      });
      const read = async () => (await queryDealDetail(scoped(db), created.id, 5))?.deal;
      expect(await read()).toMatchObject({ id: created.id, title: 'Prepared deal', value: 1200 });
      expect(await read()).toMatchObject({ id: created.id, title: 'Prepared deal' });
      // What a rolling deploy's migration may do under a running server: the kept statement's row type changes.
      const direct = new pg.Client({ connectionString: url.toString() });
      await direct.connect();
      try {
        await direct.query('alter table deals alter column title type varchar(500)');
      } finally {
        await direct.end();
      }
      expect(await read()).toMatchObject({ id: created.id, title: 'Prepared deal' });
      expect(await read()).toMatchObject({ id: created.id, title: 'Prepared deal' });
    });

    it('runs its statements without JIT and without parallel workers unless DATABASE_PARALLEL_WORKERS says how many', async () => {
      const settings = (database: Database) =>
        database.orm.em
          .fork()
          .getConnection()
          .execute<{ jit: string; workers: string }[]>(
            `select current_setting('jit') as jit, current_setting('max_parallel_workers_per_gather') as workers`,
          );
      expect(await settings(db)).toEqual([{ jit: 'off', workers: '0' }]);
      const parallel = await open(true, 3);
      try {
        expect(await settings(parallel)).toEqual([{ jit: 'off', workers: '3' }]);
      } finally {
        await parallel.close();
      }
    });

    it('sends it as plain SQL when DATABASE_PREPARED_STATEMENTS is off (a pooler without them)', async () => {
      const plain = await open(false);
      try {
        const prepared = await transaction(scoped(plain), async (tx) => {
          await queryDealDetail(tx, '0195f3a2-7c1e-7b3a-9f10-2d4e6a8c0b12', 5);
          return tx.execute<{ name: string }[]>('select name from pg_prepared_statements');
        });
        expect(prepared).toEqual([]);
      } finally {
        await plain.close();
      }
    });
  },
);
