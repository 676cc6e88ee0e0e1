import { type Database, ORG_FILTER, openDatabase, sqlOf } from '@crm/db';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migratedImage } from '../../db/test/embedded-image.ts';
import type { AuthedContext } from '../src/context.ts';
import { createDeal } from '../src/features/deals/deals.service.ts';
import { createOrganizationWithKey } from '../src/index.ts';
import { orgDb } from '../src/org-scope.ts';
import { countOnce } from '../src/query/totals.ts';
import { placeCommitted } from '../src/sequencer.ts';

/**
 * That a count is made once per state of the organization's records (docs/api/query.md, "Counted once"):
 * the count statement here draws from a sequence, so the sequence says how many times it ran. That the
 * totals are right after every kind of write is apps/server/test/list-totals.test.ts.
 */
describe('a filtered list’s count, counted once (embedded database)', () => {
  let db: Database;
  let orgId: string;
  const scoped = () => {
    const em = db.orm.em.fork();
    em.setFilterParams(ORG_FILTER, { orgId });
    return em;
  };
  const runs = async () => {
    const { rows } = await sql<{ n: string }>`select last_value as n from count_probe`.execute(
      sqlOf(db.orm.em),
    );
    return Number(rows[0]?.n);
  };
  const count = async (reuse = true) => {
    const em = scoped();
    const q = orgDb(em);
    const statement = q
      .selectFrom('deals')
      .select(sql<string>`count(*) + 0 * nextval('count_probe')`.as('total'))
      .where('value', '>=', 100);
    return Number((await countOnce(em, q, statement, reuse)).total);
  };

  beforeAll(async () => {
    db = await openDatabase({ kind: 'pglite', dataDir: 'memory://', image: migratedImage() }, 'test');
    orgId = (await createOrganizationWithKey(db.orm.em.fork(), 'Totals')).org_id;
    await sql`create sequence count_probe`.execute(sqlOf(db.orm.em));
    await sql`select nextval('count_probe')`.execute(sqlOf(db.orm.em));
    for (const value of [50, 150, 250])
      await createDeal({ principal: { orgId } } as AuthedContext, scoped(), { title: 'D', value });
  });
  afterAll(async () => {
    await db?.close();
  });

  it('counts again only when a record was written since, or a write waits for its place', async () => {
    await placeCommitted(db.orm.em);
    const before = await runs();
    expect(await count()).toBe(2);
    expect(await count()).toBe(2);
    expect(await runs()).toBe(before + 1);
    // Written and not yet placed: counted each time.
    await createDeal({ principal: { orgId } } as AuthedContext, scoped(), { title: 'E', value: 500 });
    expect(await count()).toBe(3);
    expect(await count()).toBe(3);
    expect(await runs()).toBe(before + 3);
    // Placed: a new version, counted once more, then read back.
    await placeCommitted(db.orm.em);
    expect(await count()).toBe(3);
    expect(await count()).toBe(3);
    expect(await runs()).toBe(before + 4);
    // A statement that may not be reused is counted each time.
    expect(await count(false)).toBe(3);
    expect(await runs()).toBe(before + 5);
  });
});
