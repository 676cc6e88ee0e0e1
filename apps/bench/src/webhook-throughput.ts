/**
 * `npm run bench:webhooks`: how fast one webhook worker delivers to one fast endpoint, on the embedded
 * database and on PostgreSQL. For each, it queues BENCH_WEBHOOK_EVENTS events (default 2000) for one
 * endpoint before the server starts, starts the server (`CRM_ROLE=all`, default settings: one worker, a
 * 500 ms poll interval) against a node:http receiver on 127.0.0.1 that answers 200 at once, and prints
 * deliveries per second, first to last. Then it creates BENCH_WEBHOOK_SINGLES deals (default 100), one
 * at a time, and prints how long each one's deal.created took to reach the receiver from the moment the
 * POST was sent: an upper bound of the time from its commit (the target is 50 ms, whatever the poll
 * interval). Loopback only; every phase has a deadline, and the bench stops by itself.
 * BENCH_DATABASES ("pglite", "postgresql" or both), BENCH_DATABASE_URL or TEST_DATABASE_URL (admin URL
 * of a PostgreSQL on this machine).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createOrganizationWithKey } from '@crm/api';
import { loadConfig } from '@crm/config';
import { openDatabase } from '@crm/db';
import pg from 'pg';
import { type Child, startServerProcess } from './processes.ts';

const EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 2000);
const SINGLES = Number(process.env.BENCH_WEBHOOK_SINGLES ?? 100);
if (!Number.isInteger(EVENTS) || EVENTS < 1 || EVENTS > 100_000) {
  process.stderr.write('BENCH_WEBHOOK_EVENTS must be a whole number from 1 to 100000\n');
  process.exit(1);
}
if (!Number.isInteger(SINGLES) || SINGLES < 1 || SINGLES > 1_000) {
  process.stderr.write('BENCH_WEBHOOK_SINGLES must be a whole number from 1 to 1000\n');
  process.exit(1);
}
const databases = (process.env.BENCH_DATABASES ?? 'pglite,postgresql')
  .split(',')
  .map((d) => d.trim())
  .filter(Boolean);
if (databases.length === 0 || databases.some((d) => d !== 'pglite' && d !== 'postgresql')) {
  process.stderr.write('BENCH_DATABASES takes pglite, postgresql or both, comma-separated\n');
  process.exit(1);
}
const ADMIN_URL =
  process.env.BENCH_DATABASE_URL ||
  process.env.TEST_DATABASE_URL ||
  'postgres://postgres@127.0.0.1:5432/postgres';
const LOCAL_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** The backlog must drain at 20/s at least (the old worker made 8/s), or the bench reports what it got. */
const DRAIN_DEADLINE_MS = 30_000 + EVENTS * 50;
/** Per single event; far beyond any poll interval. */
const SINGLE_DEADLINE_MS = 10_000;
/** The whole bench, whatever happens. */
const OVERALL_DEADLINE_MS = 2 * (DRAIN_DEADLINE_MS + SINGLES * SINGLE_DEADLINE_MS) + 300_000;

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SERVER_SCRIPT = path.join(ROOT, 'apps/server/src/main.ts');

const log = (msg: string) =>
  process.stdout.write(`[bench:webhooks ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const percentile = (xs: number[], p: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
};

// ---- cleanup, also on Ctrl+C and at the overall deadline ------------------------------------------

const cleanups = new Set<() => Promise<void>>();
function onCleanup(fn: () => Promise<void>): () => Promise<void> {
  cleanups.add(fn);
  return async () => {
    cleanups.delete(fn);
    await fn();
  };
}
async function cleanupAll(): Promise<void> {
  for (const fn of [...cleanups].reverse()) {
    cleanups.delete(fn);
    await fn().catch((err: unknown) => log(`cleanup failed: ${(err as Error).message}`));
  }
}
let ending = false;
function abort(reason: string, code: number) {
  if (ending) process.exit(code);
  ending = true;
  log(`${reason}: cleaning up`);
  cleanupAll().finally(() => process.exit(code));
}
process.on('SIGINT', () => abort('SIGINT', 130));
process.on('SIGTERM', () => abort('SIGTERM', 143));
setTimeout(() => abort(`not done after ${OVERALL_DEADLINE_MS / 1000} s`, 1), OVERALL_DEADLINE_MS).unref();

// ---- the receiver --------------------------------------------------------------------------------

interface Receiver {
  url: string;
  /** When each webhook-id first arrived (ms, performance.now()). */
  firstAt: Map<string, number>;
  /** When the deal.created of each deal id first arrived. */
  dealAt: Map<string, number>;
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const firstAt = new Map<string, number>();
  const dealAt = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = performance.now();
      const id = String(req.headers['webhook-id'] ?? '');
      if (!firstAt.has(id)) firstAt.set(id, at);
      try {
        const dealId = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data?: { id?: string } }).data
          ?.id;
        if (dealId && !dealAt.has(dealId)) dealAt.set(dealId, at);
      } catch {
        // not JSON: counted all the same
      }
      res.statusCode = 200;
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    firstAt,
    dealAt,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// ---- one database --------------------------------------------------------------------------------

interface Result {
  database: string;
  skipped?: string;
  delivered?: number;
  seconds?: number;
  perSecond?: number;
  singles?: number[];
  lost?: number;
}

/**
 * Creates an organization with a key and an endpoint subscribed to deal.created, and queues EVENTS
 * events for it, all before the server starts (the embedded database belongs to one process).
 */
async function prepare(env: Record<string, string>, receiverUrl: string): Promise<string> {
  const db = await openDatabase(loadConfig(env).database, 'bench-webhooks');
  try {
    const created = await createOrganizationWithKey(db.orm.em.fork(), 'Webhook bench');
    const conn = db.orm.em.getConnection();
    await conn.execute(
      `insert into webhook_endpoints (id, org_id, url, events, secret, is_active, failure_count, created_at)
       values (?, ?, ?, array['deal.created'], ?, true, 0, now() - interval '1 minute')`,
      // Stored as the service stores it without CRM_WEBHOOKS_ENCRYPTION_KEY.
      [randomUUID(), created.org_id, receiverUrl, `plain:whsec_${randomBytes(32).toString('base64')}`],
    );
    await conn.execute(
      `insert into outbox_events (id, org_id, type, payload, created_at)
       select gen_random_uuid(), ?, 'deal.created',
              json_build_object('type', 'deal.created', 'timestamp', now(), 'data', json_build_object('n', n))::text,
              now()
       from generate_series(1, ${EVENTS}) as n`,
      [created.org_id],
    );
    return created.api_key;
  } finally {
    await db.close();
  }
}

async function run(label: string, env: Record<string, string>): Promise<Result> {
  const receiver = await startReceiver();
  const closeReceiver = onCleanup(() => receiver.close());
  try {
    log(`${label}: queueing ${EVENTS} events for one endpoint`);
    const apiKey = await prepare(env, receiver.url);
    log(`${label}: starting the server`);
    const child: Child = await startServerProcess('server', SERVER_SCRIPT, {
      ...env,
      LOG_LEVEL: 'warn',
      CRM_BOOTSTRAP_ORG: 'false',
      CRM_ROLE: 'all',
      CRM_WEBHOOKS_ALLOW_PRIVATE: 'true',
      CRM_RATE_LIMIT_CRUD: '1000000',
      REDIS_URL: '',
    });
    const stop = onCleanup(() => child.stop());
    try {
      // The worker starts with the server and drains the backlog from there.
      const deadline = performance.now() + DRAIN_DEADLINE_MS;
      while (receiver.firstAt.size < EVENTS && performance.now() < deadline) await sleep(20);
      const times = [...receiver.firstAt.values()];
      const delivered = times.length;
      const seconds = delivered > 1 ? (Math.max(...times) - Math.min(...times)) / 1000 : Number.NaN;
      const perSecond = (delivered - 1) / seconds;
      log(
        `${label}: ${delivered} of ${EVENTS} delivered in ${seconds.toFixed(2)} s: ${perSecond.toFixed(0)} deliveries/s`,
      );
      if (delivered < EVENTS) log(`${label}: the server's last output:\n${child.output() || '(none)'}`);

      const singles: number[] = [];
      let lost = 0;
      for (let i = 0; i < SINGLES; i++) {
        // A random phase against the poll interval.
        await sleep(20 + Math.random() * 50);
        const sent = performance.now();
        const res = await fetch(`${child.url}/api/v1/crm/deals`, {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ title: `Webhook bench ${i}` }),
        });
        const body = (await res.json()) as { data?: { id?: string } };
        const dealId = body.data?.id;
        if (res.status !== 201 || !dealId) throw new Error(`POST /deals answered ${res.status}`);
        const until = performance.now() + SINGLE_DEADLINE_MS;
        while (!receiver.dealAt.has(dealId) && performance.now() < until) await sleep(1);
        const at = receiver.dealAt.get(dealId);
        if (at === undefined) lost++;
        else singles.push(at - sent);
        if (lost >= 3) {
          log(
            `${label}: 3 single events did not arrive; the server's last output:\n${child.output() || '(none)'}`,
          );
          break;
        }
      }
      log(
        `${label}: single events, POST sent to received: p50 ${percentile(singles, 50).toFixed(1)} ms, p99 ${percentile(singles, 99).toFixed(1)} ms${lost ? `, ${lost} not within ${SINGLE_DEADLINE_MS / 1000} s` : ''}`,
      );
      return { database: label, delivered, seconds, perSecond, singles, lost };
    } finally {
      await stop();
    }
  } finally {
    await closeReceiver();
  }
}

async function embedded(): Promise<Result> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'crm-bench-webhooks-'));
  const remove = onCleanup(async () => rmSync(dir, { recursive: true, force: true }));
  try {
    return await run('Embedded (PGlite)', { CRM_DATA_DIR: dir, DATABASE_URL: '' });
  } finally {
    await remove();
  }
}

async function postgres(): Promise<Result> {
  const label = 'PostgreSQL';
  let admin: URL;
  try {
    admin = new URL(ADMIN_URL);
  } catch {
    return { database: label, skipped: 'the admin URL is not a valid URL' };
  }
  if (!LOCAL_HOSTS.has(admin.hostname))
    return { database: label, skipped: `${admin.hostname} is not this machine: the bench stays on loopback` };
  const adminClient = async () => {
    const client = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 5_000 });
    await client.connect();
    return client;
  };
  const name = `crm_bench_${randomBytes(5).toString('hex')}`;
  try {
    const client = await adminClient();
    try {
      await client.query(`create database ${name}`);
    } finally {
      await client.end();
    }
  } catch (err) {
    return { database: label, skipped: `PostgreSQL at ${admin.host}: ${(err as Error).message}` };
  }
  const drop = onCleanup(async () => {
    const client = await adminClient();
    try {
      await client.query(`drop database if exists ${name} with (force)`);
    } finally {
      await client.end();
    }
  });
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  try {
    return await run(label, { DATABASE_URL: url.toString() });
  } finally {
    await drop();
  }
}

// ---- main ----------------------------------------------------------------------------------------

log(
  `${EVENTS} events queued for one endpoint, then ${SINGLES} single events; node ${process.version}, ${os.availableParallelism()} × ${os.cpus()[0]?.model.trim() ?? 'unknown CPU'}`,
);
const results: Result[] = [];
for (const [label, half] of [
  ['Embedded (PGlite)', databases.includes('pglite') ? embedded : undefined],
  ['PostgreSQL', databases.includes('postgresql') ? postgres : undefined],
] as const) {
  if (!half) continue;
  try {
    results.push(await half());
  } catch (err) {
    log(`${label} failed: ${(err as Error).stack ?? String(err)}`);
    await cleanupAll();
    results.push({ database: label, skipped: `failed: ${(err as Error).message}` });
  }
}

const ms = (x: number | undefined) => (x === undefined || Number.isNaN(x) ? '–' : `${x.toFixed(1)} ms`);
const lines = [
  '',
  `| database | backlog delivered | deliveries/s (target ≥ 200) | single event p50 | p99 (target 50 ms) | lost |`,
  '|---|---|---|---|---|---|',
  ...results.map((r) =>
    r.skipped
      ? `| ${r.database} | skipped: ${r.skipped} | | | | |`
      : `| ${r.database} | ${r.delivered} of ${EVENTS} in ${r.seconds?.toFixed(2)} s | ${r.perSecond?.toFixed(0)} | ${ms(percentile(r.singles ?? [], 50))} | ${ms(percentile(r.singles ?? [], 99))} | ${r.lost ?? 0} |`,
  ),
  '',
  'Single events: from sending POST /deals to the receiver having the body, so an upper bound of commit to receipt.',
];
process.stdout.write(`${lines.join('\n')}\n`);
process.exit(results.some((r) => r.delivered !== undefined && r.delivered < EVENTS) ? 1 : 0);
