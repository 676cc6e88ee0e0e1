import { createOrganizationWithKey, findActiveKey, forgetLookedUpKeys, KEY_CACHE_TTL_MS } from '@crm/api';
import { type Database, type DatabaseConfig, openDatabase, sqlOf } from '@crm/db';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createDatabase, DRIVERS, embeddedImageOf } from './harness.ts';

const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL;

/** How a server finds the key of each request: one query for all the requests that ask at once. */
describe.each(DRIVERS)('API key lookups on $label', ({ driver, skip }) => {
  let db: Database;
  let dropDatabase = async () => {};
  let apiKey = '';
  let keyId = '';

  beforeAll(async () => {
    if (skip) return;
    let config: DatabaseConfig;
    if (driver === 'postgresql' && TEST_DATABASE_URL) {
      const created = await createDatabase(TEST_DATABASE_URL);
      dropDatabase = created.drop;
      config = {
        kind: 'postgresql',
        url: created.url,
        poolMax: 4,
        connectTimeoutMs: 10_000,
        queryTimeoutMs: 10_000,
      };
    } else {
      config = { kind: 'pglite', dataDir: 'memory://', image: embeddedImageOf() };
    }
    db = await openDatabase(config, 'test');
    const created = await createOrganizationWithKey(db.orm.em.fork(), 'Lookups');
    apiKey = created.api_key;
    keyId = created.key_id;
  });

  afterAll(async () => {
    await db?.close();
    await dropDatabase();
  });

  /** What the query builder sends every query outside a transaction through (the key lookup's way). */
  const executor = () => sqlOf(db.orm.em.fork()).getExecutor();

  /** Counts the key queries the database receives (they still run). */
  function countKeyQueries() {
    const spy = vi.spyOn(executor(), 'executeQuery');
    return {
      count: () => spy.mock.calls.filter(([query]) => /from "?api_keys"?/.test(query.sql)).length,
      restore: () => spy.mockRestore(),
    };
  }

  it.skipIf(skip)(
    'twenty requests arriving at once with a key not looked up yet send one query',
    async () => {
      forgetLookedUpKeys();
      const queries = countKeyQueries();
      try {
        const found = await Promise.all(
          Array.from({ length: 20 }, () => findActiveKey(db.orm.em.fork(), apiKey)),
        );
        expect(found.map((k) => k?.id)).toEqual(Array(20).fill(keyId));
        expect(queries.count()).toBe(1);
        // Remembered: the next request sends none; once the entry lapses, one again for the next burst.
        await findActiveKey(db.orm.em.fork(), apiKey);
        expect(queries.count()).toBe(1);
        await new Promise((r) => setTimeout(r, KEY_CACHE_TTL_MS + 50));
        await Promise.all(Array.from({ length: 5 }, () => findActiveKey(db.orm.em.fork(), apiKey)));
        expect(queries.count()).toBe(2);
      } finally {
        queries.restore();
      }
    },
  );

  it.skipIf(skip)('a request after a revocation does not join a lookup that began before it', async () => {
    forgetLookedUpKeys();
    // The first lookup reads the key while it is active, and its answer is held until the revocation is in.
    const queries = executor();
    const execute = queries.executeQuery.bind(queries);
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const spy = vi.spyOn(queries, 'executeQuery').mockImplementationOnce(async (...args) => {
      const rows = await execute(...args);
      await held;
      return rows;
    });
    try {
      const before = findActiveKey(db.orm.em.fork(), apiKey);
      await vi.waitUntil(() => spy.mock.calls.length === 1);
      await db.orm.em.fork().execute('update api_keys set revoked_at = now() where id = ?', [keyId]);
      forgetLookedUpKeys();
      const after = findActiveKey(db.orm.em.fork(), apiKey);
      release();
      expect((await before)?.id).toBe(keyId);
      expect(await after).toBeUndefined();
      // What the earlier lookup read is not remembered either.
      expect(await findActiveKey(db.orm.em.fork(), apiKey)).toBeUndefined();
    } finally {
      release();
      spy.mockRestore();
    }
  });
});
