import { type Database, ORG_FILTER, openDatabase } from '@crm/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migratedImage } from '../../db/test/embedded-image.ts';
import type { AuthedContext } from '../src/context.ts';
import { createDeal } from '../src/features/deals/deals.service.ts';
import { largeTables } from '../src/features/search/search.service.ts';
import { createOrganizationWithKey } from '../src/index.ts';

/**
 * Which plan a search takes follows the organization's kept counts (docs/development.md: Search at scale); the answers
 * of both plans are compared in apps/server/test/search-at-scale.test.ts.
 */
describe('the search plan of an organization by its size (embedded database)', () => {
  let db: Database;
  let orgId: string;

  beforeAll(async () => {
    db = await openDatabase({ kind: 'pglite', dataDir: 'memory://', image: migratedImage() }, 'test');
    orgId = (await createOrganizationWithKey(db.orm.em.fork(), 'Sizes')).org_id;
    const em = db.orm.em.fork();
    em.setFilterParams(ORG_FILTER, { orgId });
    for (const title of ['One', 'Two', 'Three'])
      await createDeal({ principal: { orgId } } as AuthedContext, em, { title });
  });
  afterAll(async () => {
    await db?.close();
  });

  it('reads deals as a large organization’s past the threshold, from the counts the database keeps', async () => {
    const em = db.orm.em.fork();
    em.setFilterParams(ORG_FILTER, { orgId });
    expect(await largeTables(em, 2)).toEqual({ deals: true, contacts: false });
    expect(await largeTables(em, 3)).toEqual({ deals: false, contacts: false });
    expect(await largeTables(em, 0)).toEqual({ deals: true, contacts: false });
  });
});
