import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { loadConfig } from '@crm/config';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/logger.ts';
import { type RunningServer, startServer } from '../src/server.ts';
import {
  CONTRACT_RATE_LIMITS,
  DRIVERS,
  type DriverName,
  memoryLogger,
  startTestServer,
  type TestServer,
} from './harness.ts';

const REDIS_URL = process.env.REDIS_URL;
const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL;

function onPath(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
const HAS_REDIS_SERVER = onPath('redis-server');

/** Every key these tests write in the shared Redis starts with this, and is deleted afterwards. */
const prefix = () => `crm-test-${randomBytes(6).toString('hex')}:`;

async function deleteKeys(url: string, keyPrefix: string): Promise<void> {
  const redis = new Redis(url);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${keyPrefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

interface Call {
  status: number;
  used: number;
}

async function call(baseUrl: string, key: string, path = '/deals?limit=1'): Promise<Call> {
  const res = await fetch(`${baseUrl}/api/v1/crm${path}`, { headers: { authorization: `Bearer ${key}` } });
  await res.arrayBuffer();
  return { status: res.status, used: Number(res.headers.get('x-api-quota-used')) };
}

async function inParallel<T>(
  count: number,
  concurrency: number,
  send: (i: number) => Promise<T>,
): Promise<T[]> {
  const results: T[] = [];
  for (let i = 0; i < count; i += concurrency) {
    const batch = Array.from({ length: Math.min(concurrency, count - i) }, (_, j) => send(i + j));
    results.push(...(await Promise.all(batch)));
  }
  return results;
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe.skipIf(!REDIS_URL || !TEST_DATABASE_URL)(
  `two instances sharing one Redis and one PostgreSQL${REDIS_URL && TEST_DATABASE_URL ? '' : ' (skipped: REDIS_URL and TEST_DATABASE_URL must both be set)'}`,
  () => {
    let s: TestServer;
    let second: RunningServer;
    const keyPrefix = prefix();

    beforeAll(async () => {
      s = await startTestServer('postgresql', {
        ...CONTRACT_RATE_LIMITS,
        // One window for the whole test: on a loaded machine the 300 calls once took longer than a minute,
        // and a second window's calls were accepted (250 of 300). Exactness is the point here, not its length.
        CRM_RATE_LIMIT_WINDOW_SECONDS: '600',
        REDIS_URL: REDIS_URL as string,
        CRM_REDIS_PREFIX: keyPrefix,
        CRM_USAGE_FLUSH_INTERVAL_MS: '200',
      });
      const config = loadConfig(s.env);
      second = await startServer(config, createLogger(config));
    });
    afterAll(async () => {
      await second?.stop();
      await s?.stop();
      if (REDIS_URL) await deleteKeys(REDIS_URL, keyPrefix);
    });

    it('enforce one rate-limit budget: of 300 calls spread over both, exactly 200 are accepted', async () => {
      const org = await s.newOrg('Shared budget org');
      const urls = [s.url, second.url];
      const results = await inParallel(300, 20, (i) => call(urls[i % 2] as string, org.apiKey));
      const accepted = results.filter((r) => r.status === 200);
      expect(accepted).toHaveLength(200);
      expect(results.filter((r) => r.status === 429)).toHaveLength(100);
      // Each accepted call got its own count: none lost, none doubled, though two processes counted.
      expect(accepted.map((r) => r.used).sort((a, b) => a - b)).toEqual(range(1, 200));
      // Both instances served some of them.
      const fromEach = await Promise.all(urls.map((u) => call(u, org.apiKey, '/pipeline/stages')));
      expect(fromEach.map((r) => r.status)).toEqual([200, 200]);
      expect(fromEach.map((r) => r.used).sort()).toEqual([201, 202]);
    });

    it('enforce one monthly quota exactly, and the database ends up with every counted call', async () => {
      const org = await s.newOrg('Shared budget org', { api_calls: 50 });
      const urls = [s.url, second.url];
      const results = await inParallel(80, 16, (i) => call(urls[i % 2] as string, org.apiKey));
      const accepted = results.filter((r) => r.status === 200);
      expect(accepted.map((r) => r.used).sort((a, b) => a - b)).toEqual(range(1, 50));
      expect(results.filter((r) => r.status === 429)).toHaveLength(30);
      await until('both instances to store their counts', async () => {
        const rows = await s.sql<{ used: unknown }>(
          "select used from usage_counters where org_id = ? and quota = 'api_calls'",
          [org.orgId],
        );
        return Number(rows[0]?.used) === 50;
      });
    });
  },
);

/** A private Redis this test may stop and start; the shared one on 6379 is never touched. */
class PrivateRedis {
  private child: ChildProcess | undefined;
  readonly port: number;

  constructor(port: number) {
    this.port = port;
  }

  get url() {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const child = spawn('redis-server', ['--port', String(this.port), '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
    });
    this.child = child;
    await until('the private redis-server to answer', async () => {
      const probe = new Redis(this.url, { lazyConnect: true, retryStrategy: () => null });
      probe.on('error', () => undefined);
      try {
        await probe.connect();
        return (await probe.ping()) === 'PONG';
      } catch {
        return false;
      } finally {
        probe.disconnect();
      }
    });
  }

  /** SIGSTOP: the connection stays open and nothing answers, as a hung Redis does. */
  pause(): void {
    this.child?.kill('SIGSTOP');
  }

  resume(): void {
    this.child?.kill('SIGCONT');
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      srv.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** A test server whose counters live in a private redis-server the test may stop or pause; its log is kept. */
async function startWithPrivateRedis(driver: DriverName, env: Record<string, string>) {
  const redis = new PrivateRedis(await freePort());
  await redis.start();
  const serverLog = memoryLogger();
  const s = await startTestServer(
    driver,
    {
      ...CONTRACT_RATE_LIMITS,
      CRM_RATE_LIMIT_CRUD: '100',
      // During an outage each of the 4 instances this one pretends to be may let 25 through.
      CRM_INSTANCE_COUNT: '4',
      REDIS_URL: redis.url,
      ...env,
    },
    { logger: serverLog.logger },
  );
  return { redis, s, messages: (pattern: RegExp) => serverLog.lines.filter((l) => pattern.test(l.msg)) };
}

for (const { driver, label, skip } of DRIVERS) {
  describe.skipIf(skip || !HAS_REDIS_SERVER)(
    `Redis stopped mid-test on ${label}${HAS_REDIS_SERVER ? '' : ' (skipped: redis-server is not on the PATH)'}`,
    () => {
      let redis: PrivateRedis;
      let s: TestServer;
      let messages: (pattern: RegExp) => Array<{ level: number; msg: string }>;

      beforeAll(async () => {
        ({ redis, s, messages } = await startWithPrivateRedis(driver, {
          CRM_USAGE_FLUSH_INTERVAL_MS: '200',
        }));
      });
      afterAll(async () => {
        await s?.stop();
        await redis?.stop();
      });

      it('keeps answering under the per-instance fallback limit, counts on exactly, and logs the outage once', async () => {
        const key = s.orgA.apiKey;
        const before = await inParallel(5, 1, () => call(s.url, key));
        expect(before).toEqual(range(1, 5).map((used) => ({ status: 200, used })));

        await redis.stop();
        const during = await inParallel(30, 1, () => call(s.url, key));
        const accepted = during.filter((r) => r.status === 200);
        // The insurance limiter: 100 per minute shared by 4 instances is 25 for this one.
        expect(accepted).toHaveLength(25);
        expect(during.slice(25).map((r) => r.status)).toEqual([429, 429, 429, 429, 429]);
        // The count goes on from the last one Redis gave, one by one.
        expect(accepted.map((r) => r.used)).toEqual(range(6, 30));
        // Other groups keep working too.
        expect((await call(s.url, key, '/pipeline/stages')).status).toBe(200);
        expect(messages(/Redis is unavailable/)).toHaveLength(1);
        expect(messages(/Redis is unavailable/)[0]?.level).toBe(40);

        // A new, empty Redis comes up on the same port: the counters are seeded from the database.
        await redis.start();
        await until('the service to notice Redis is back', () => messages(/Redis is back/).length === 1);
        const after = await inParallel(5, 1, () => call(s.url, key));
        expect(after).toEqual(range(32, 36).map((used) => ({ status: 200, used })));
        expect(messages(/Redis is unavailable/)).toHaveLength(1);
        expect(messages(/Redis is back/)).toHaveLength(1);
      });
    },
  );
}

for (const { driver, label, skip } of DRIVERS) {
  describe.skipIf(skip || !HAS_REDIS_SERVER)(
    `Redis that hangs (SIGSTOP) on ${label}${HAS_REDIS_SERVER ? '' : ' (skipped: redis-server is not on the PATH)'}`,
    () => {
      let redis: PrivateRedis;
      let s: TestServer;
      let messages: (pattern: RegExp) => Array<{ level: number; msg: string }>;

      beforeAll(async () => {
        ({ redis, s, messages } = await startWithPrivateRedis(driver, {}));
      });
      afterAll(async () => {
        redis?.resume();
        await s?.stop();
        await redis?.stop();
      });

      it('costs one command timeout, then calls skip Redis at once under the instance’s share, and it is used again once it answers', async () => {
        const key = s.orgA.apiKey;
        const policy = async () => (await s.api('/deals?limit=1', { key })).headers.get('ratelimit-policy');
        expect(await policy()).toBe('"crud";q=100;w=60');

        redis.pause();
        try {
          const timings: number[] = [];
          const statuses: number[] = [];
          let limited: { limit?: number } | undefined;
          for (let i = 0; i < 30; i++) {
            const started = performance.now();
            const res = await s.api('/deals?limit=1', { key });
            timings.push(performance.now() - started);
            statuses.push(res.status);
            if (res.status === 429) limited = res.body;
          }
          // The first call notices the hang (one 250 ms timeout); the others do not wait for Redis at all.
          const rest = timings.slice(1).sort((a, b) => a - b);
          expect(rest[Math.floor(rest.length / 2)]).toBeLessThan(100);
          expect(Math.max(...rest)).toBeLessThan(240);
          // This instance's share of 100 among 4 is 25, and a 429 names the limit it enforced.
          expect(statuses.filter((x) => x === 200)).toHaveLength(25);
          expect(limited?.limit).toBe(25);
          expect(messages(/Redis is unavailable/)).toHaveLength(1);
        } finally {
          redis.resume();
        }
        await until(
          'the service to notice Redis answers again',
          () => messages(/Redis is back/).length === 1,
        );
        expect(await policy()).toBe('"crud";q=100;w=60');
      });
    },
  );
}
