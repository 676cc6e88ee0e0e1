/**
 * `node apps/bench/src/limits-cost.ts`: what the rate-limit and quota check adds to one request, next to
 * baselines measured in the same run. In memory (embedded mode): CPU time per call of `admitRequest`,
 * beside the SHA-256 of the API key that authentication already does on every request. With REDIS_URL
 * (cluster mode): time per call, one at a time and 50 at once, beside a bare Redis PING.
 * Runs for a few seconds on 127.0.0.1 only; LIMITS_COST_CALLS sets the calls per measurement (default 20000).
 */
import { createHash, randomBytes } from 'node:crypto';
import { type AuthedContext, admitRequest, createOrganizationWithKey, Limits, type Log } from '@crm/api';
import { loadConfig } from '@crm/config';
import { openDatabase } from '@crm/db';
import { Redis } from 'ioredis';

const CALLS = Number(process.env.LIMITS_COST_CALLS ?? 20_000);
const silent: Log = { info: () => undefined, warn: () => undefined, error: () => undefined };
const out = (line: string) => process.stdout.write(`${line}\n`);

/** CPU microseconds per call of `fn`, run `calls` times one after the other. */
async function cpuPerCall(calls: number, fn: () => unknown): Promise<number> {
  for (let i = 0; i < 2_000; i++) await fn(); // warm-up
  const start = process.cpuUsage();
  for (let i = 0; i < calls; i++) await fn();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / calls;
}

/** Wall-clock microseconds per call with `concurrency` calls in flight. */
async function wallPerCall(calls: number, concurrency: number, fn: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 500; i++) await fn();
  const start = process.hrtime.bigint();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < calls) await fn();
    }),
  );
  return Number(process.hrtime.bigint() - start) / 1e3 / calls;
}

const db = await openDatabase({ kind: 'pglite', dataDir: 'memory://' }, 'bench');
const org = await createOrganizationWithKey(db.orm.em.fork(), 'Cost org');
const principal = { orgId: org.org_id, apiKeyId: org.key_id };
const unlimited = {
  LOG_LEVEL: 'silent',
  CRM_DATA_DIR: 'memory://',
  CRM_RATE_LIMIT_CRUD: '1000000000',
  CRM_API_QUOTA_MONTHLY: '1000000000000',
};

async function admitCost(limits: Limits) {
  return () => {
    const ctx = { services: { limits }, principal, response: { headers: {} } } as unknown as AuthedContext;
    return admitRequest(ctx, 'crud');
  };
}

const key = `ck_${randomBytes(24).toString('base64url')}`;
const hashUs = await cpuPerCall(CALLS, () => createHash('sha256').update(key).digest('hex'));

const memory = await Limits.create(loadConfig(unlimited).limits, db.orm, silent);
const memoryUs = await cpuPerCall(CALLS, await admitCost(memory));
await memory.close();
out(`embedded (memory): admitRequest ${memoryUs.toFixed(1)} µs CPU per call`);
out(`  baseline in this run: SHA-256 of the API key ${hashUs.toFixed(1)} µs CPU per call`);

const redisUrl = process.env.REDIS_URL;
if (redisUrl) {
  const keyPrefix = `crm-cost-${randomBytes(4).toString('hex')}:`;
  const clustered = await Limits.create(
    loadConfig({ ...unlimited, REDIS_URL: redisUrl, CRM_REDIS_PREFIX: keyPrefix }).limits,
    db.orm,
    silent,
  );
  const admit = await admitCost(clustered);
  const redis = new Redis(redisUrl);
  const ping = () => redis.ping();
  const redisCalls = Math.min(CALLS, 5_000);
  out(
    `cluster (Redis): admitRequest ${(await wallPerCall(redisCalls, 1, admit)).toFixed(0)} µs per call one at a time, ` +
      `${(await wallPerCall(redisCalls, 50, admit)).toFixed(0)} µs per call with 50 in flight`,
  );
  out(
    `  baseline in this run: Redis PING ${(await wallPerCall(redisCalls, 1, ping)).toFixed(0)} µs one at a time, ` +
      `${(await wallPerCall(redisCalls, 50, ping)).toFixed(0)} µs with 50 in flight`,
  );
  out(`  CPU: admitRequest ${(await cpuPerCall(redisCalls, admit)).toFixed(1)} µs per call`);
  await clustered.close();
  const keys = await redis.keys(`${keyPrefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
}
await db.close();
