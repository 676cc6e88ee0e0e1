import { loadConfig } from '@crm/config';
import { type Database, openDatabase } from '@crm/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migratedImage } from '../../db/test/embedded-image.ts';
import { createOrganizationWithKey, deleteOrganization, Limits, type Log } from '../src/index.ts';

describe('usage counts when an organization is deleted (embedded database)', () => {
  let db: Database;
  let limits: Limits;
  const logged: Array<{ level: string; msg: string }> = [];
  const log: Log = {
    info: (_o, msg) => logged.push({ level: 'info', msg }),
    warn: (_o, msg) => logged.push({ level: 'warn', msg }),
    error: (_o, msg) => logged.push({ level: 'error', msg }),
  };

  beforeAll(async () => {
    db = await openDatabase({ kind: 'pglite', dataDir: 'memory://', image: migratedImage() }, 'test');
    const config = loadConfig({
      LOG_LEVEL: 'silent',
      CRM_DATA_DIR: 'memory://',
      CRM_USAGE_FLUSH_INTERVAL_MS: '60000',
    });
    limits = await Limits.create(config.limits, db.orm, log);
  });
  afterAll(async () => {
    await limits?.close();
    await db?.close();
  });

  const stored = async (orgId: string) =>
    Number(
      (
        await db.orm.em
          .fork()
          .execute<{ used: string }[]>(
            "select coalesce(sum(used), 0) as used from usage_counters where org_id = ? and quota = 'api_calls'",
            [orgId],
          )
      )[0]?.used,
    );

  it("one organization's deletion never keeps the others' counts from being stored", async () => {
    const em = db.orm.em.fork();
    const kept = await createOrganizationWithKey(em, 'Kept');
    const gone = await createOrganizationWithKey(em, 'Gone');
    for (let i = 0; i < 3; i++) await limits.admit({ orgId: kept.org_id, apiKeyId: kept.key_id }, 'crud');
    for (let i = 0; i < 2; i++) await limits.admit({ orgId: gone.org_id, apiKeyId: gone.key_id }, 'crud');
    // Deleted between its calls and the flush that would store them.
    expect(await deleteOrganization(em, gone.org_id)).toBe(true);
    await limits.flush();
    expect(await stored(kept.org_id)).toBe(3);
    expect(await stored(gone.org_id)).toBe(0);
    const daily = await limits.dailyUsage(kept.org_id, 1);
    expect(daily[0]?.api_calls).toBe(3);
    // Later flushes go on storing.
    await limits.admit({ orgId: kept.org_id, apiKeyId: kept.key_id }, 'crud');
    await limits.flush();
    expect(await stored(kept.org_id)).toBe(4);
    expect(logged.filter((l) => l.level !== 'info')).toEqual([]);
  });

  it('deleting an organization takes all its data with it, and answers false for one that is not there', async () => {
    const em = db.orm.em.fork();
    const org = await createOrganizationWithKey(em, 'Doomed');
    expect(await deleteOrganization(em, org.org_id)).toBe(true);
    for (const table of ['api_keys', 'pipelines', 'pipeline_stages', 'audit_log'])
      expect(await em.execute(`select 1 from ${table} where org_id = ?`, [org.org_id]), table).toEqual([]);
    expect(await deleteOrganization(em, org.org_id)).toBe(false);
  });
});
