import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, memoryLogger, startTestServer, type TestServer } from './harness.ts';
import { mcpClient } from './mcp-client.ts';
import { type HangingProxy, startHangingProxy } from './tcp-proxy.ts';

/** GET /deals until it answers 200 (or 20 s pass): the status it last answered. */
async function answersAgain(s: TestServer): Promise<number> {
  const deadline = Date.now() + 20_000;
  let status = 0;
  while (Date.now() < deadline) {
    status = (await s.api('/deals')).status;
    if (status === 200) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  return status;
}
const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL;

describe.skipIf(!TEST_DATABASE_URL)(
  `a PostgreSQL that hangs${TEST_DATABASE_URL ? '' : ' (skipped: TEST_DATABASE_URL is not set)'}`,
  () => {
    let proxy: HangingProxy;
    let s: TestServer;
    let dropDatabase: () => Promise<void>;
    const serverLog = memoryLogger();
    const logged = serverLog.lines;

    beforeAll(async () => {
      const created = await createDatabase(TEST_DATABASE_URL as string);
      dropDatabase = created.drop;
      const url = new URL(created.url);
      proxy = await startHangingProxy({ host: url.hostname, port: Number(url.port || 5432) });
      url.host = `127.0.0.1:${proxy.port}`;
      // The server reaches its database only through the proxy (DATABASE_URL wins over the embedded default).
      s = await startTestServer(
        'pglite',
        {
          DATABASE_URL: url.toString(),
          DATABASE_CONNECT_TIMEOUT_MS: '1000',
          DATABASE_QUERY_TIMEOUT_MS: '1500',
          CRM_WEBHOOKS_POLL_INTERVAL_MS: '200',
        },
        { logger: serverLog.logger },
      );
    });
    afterAll(async () => {
      proxy?.resume();
      await s?.stop();
      await proxy?.close();
      await dropDatabase?.();
    });

    it('answers 503 service_unavailable with Retry-After within seconds, never hangs, and /readyz says 503 within 2 s', async () => {
      expect((await s.api('/deals')).status).toBe(200);
      const before = await s.api('/deals', { method: 'POST', json: { title: 'Before the outage' } });
      expect(before.status).toBe(201);
      proxy.hang();
      // A transaction whose BEGIN times out on a pooled (idle) connection: kysely kept such a connection
      // checked out for good, so the pool shrank by one per outage and closing it waited forever.
      const began = s.running.db.orm.em
        .fork()
        .transactional((em) => em.execute('select 1'))
        .then(
          () => 'committed',
          (err: Error) => err.message,
        );
      try {
        const started = Date.now();
        const answers = await Promise.all(
          Array.from({ length: 15 }, (_, i) =>
            i % 3 === 0
              ? s.api('/deals')
              : i % 3 === 1
                ? s.api('/deals', { method: 'POST', json: { title: `During outage ${i}` } })
                : // an update runs in a transaction
                  s.api(`/deals/${before.body.data.id}`, {
                    method: 'PATCH',
                    json: { title: `During outage ${i}` },
                  }),
          ),
        );
        const elapsed = Date.now() - started;
        for (const res of answers) {
          expect(res.status, res.text).toBe(503);
          expect(res.body.code).toBe('service_unavailable');
          expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
        }
        expect(elapsed).toBeLessThan(8_000);

        const ready = Date.now();
        const readyz = await fetch(`${s.url}/readyz`);
        expect(readyz.status).toBe(503);
        expect(Date.now() - ready).toBeLessThan(2_000);
        expect((await fetch(`${s.url}/healthz`)).status).toBe(200);
        // The dashboard's sign-in, which better-auth answers, says the same rather than a bare 500.
        const signIn = await fetch(`${s.url}/admin/auth/sign-in/email`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', origin: s.url },
          body: JSON.stringify({ email: 'someone@example.com', password: 'a-password-of-length' }),
        });
        expect(signIn.status).toBe(503);
        expect(((await signIn.json()) as { code: string }).code).toBe('service_unavailable');
        expect(await began).toMatch(/timeout|terminated/i);
      } finally {
        proxy.resume();
      }
    });

    it('recovers by itself once the database answers again, with nothing of the failed writes stored', async () => {
      expect(await answersAgain(s)).toBe(200);
      expect((await fetch(`${s.url}/readyz`)).status).toBe(200);
      // The webhook worker, failing a pass every 200 ms during the outage, said so once, and its end once.
      const deadlineLog = Date.now() + 10_000;
      while (Date.now() < deadlineLog && !logged.some((l) => l.msg === 'webhook worker passes work again'))
        await new Promise((r) => setTimeout(r, 100));
      expect(logged.filter((l) => /webhook worker pass failed/.test(l.msg))).toHaveLength(1);
      expect(logged.filter((l) => l.msg === 'webhook worker passes work again')).toHaveLength(1);
      const stored = await s.sql<{ n: number }>(
        "select count(*)::int as n from deals where title like 'During outage%'",
      );
      // A write is answered 503 only if it did not commit; each one that did commit was answered 201.
      expect(stored[0]?.n).toBe(0);
    });

    it('logs a call the outage failed alike on every door: one warning line with no stack, no error', async () => {
      const mcp = await mcpClient(s.url, s.orgA.apiKey);
      const trpc = s.trpc(s.orgA);
      const from = logged.length;
      proxy.hang();
      try {
        // First, while the key the client just connected with is still known without the database: the
        // failure is the tool call's own, not the key check's.
        const tool = await mcp.callTool({ name: 'deals-list', arguments: { limit: 1 } });
        expect(tool.isError).toBe(true);
        expect((await s.api('/deals', { headers: { 'x-request-id': 'outage-rest' } })).status).toBe(503);
        await expect(trpc.deals.list.query({ limit: 1 })).rejects.toThrow(/not answering/);
      } finally {
        proxy.resume();
        await mcp.close();
      }
      // The calls' own lines: the background work the outage also fails (the webhook worker, the usage
      // flush) logs on its own terms.
      const lines = logged.slice(from).filter((l) => l.level >= 40 && l.req_id !== undefined);
      expect(lines.filter((l) => l.level >= 50)).toEqual([]);
      expect(lines.map((l) => [l.msg, l.err])).toEqual([
        ['service unavailable', undefined],
        ['service unavailable', undefined],
        ['service unavailable', undefined],
      ]);
      expect(lines[1]?.req_id).toBe('outage-rest');
    });

    it('stops within seconds afterwards: the outage left no connection checked out', async () => {
      const bound = new Promise<string>((resolve) => setTimeout(() => resolve('still stopping'), 15_000));
      expect(await Promise.race([s.stop().then(() => 'stopped'), bound])).toBe('stopped');
    });
  },
);

describe.skipIf(!TEST_DATABASE_URL)(
  `a PostgreSQL that stops answering requests already waiting on it${TEST_DATABASE_URL ? '' : ' (skipped: TEST_DATABASE_URL is not set)'}`,
  () => {
    // The four requests below, a statement outside requests, and the webhook worker's pass.
    const POOL_MAX = 6;
    let proxy: HangingProxy;
    let s: TestServer;
    let databaseUrl: string;
    let dropDatabase: () => Promise<void>;

    beforeAll(async () => {
      const created = await createDatabase(TEST_DATABASE_URL as string);
      databaseUrl = created.url;
      dropDatabase = created.drop;
      const url = new URL(created.url);
      proxy = await startHangingProxy({ host: url.hostname, port: Number(url.port || 5432) });
      url.host = `127.0.0.1:${proxy.port}`;
      // The production timeouts (a 10 s statement timeout, a 2 s connect timeout), unlike the suite above.
      s = await startTestServer('pglite', {
        DATABASE_URL: url.toString(),
        DATABASE_CONNECT_TIMEOUT_MS: '2000',
        DATABASE_POOL_MAX: String(POOL_MAX),
      });
    });
    afterAll(async () => {
      proxy?.resume();
      await s?.stop();
      await proxy?.close();
      await dropDatabase?.();
    });

    it('answers the requests whose statements it holds 503 within 4 s, not at the 10 s statement timeout', async () => {
      const deal = await s.api('/deals', { method: 'POST', json: { title: 'Before the freeze' } });
      expect(deal.status).toBe(201);
      // Every connection of the pool open and idle: each request below sends its statement at once.
      await Promise.all(Array.from({ length: POOL_MAX }, () => s.sql('select pg_sleep(0.3)')));
      proxy.hang();
      const frozen = Date.now();
      // Outside requests (migrations, `crm import`, the webhook worker) a statement waits out a short freeze.
      const outside = s.sql<{ n: number }>('select 1 as n');
      try {
        const timed = async (call: Promise<{ status: number; body: { code?: string } }>) => {
          const started = Date.now();
          const res = await call;
          return { status: res.status, code: res.body?.code, ms: Date.now() - started };
        };
        const answers = await Promise.all([
          timed(s.api('/deals')),
          timed(s.api(`/deals/${deal.body.data.id}`)),
          timed(s.api('/deals', { method: 'POST', json: { title: 'During the freeze' } })),
          // an update runs in a transaction
          timed(
            s.api(`/deals/${deal.body.data.id}`, { method: 'PATCH', json: { title: 'During the freeze' } }),
          ),
        ]);
        for (const answer of answers) {
          expect(answer.status, JSON.stringify(answers)).toBe(503);
          expect(answer.code).toBe('service_unavailable');
          expect(answer.ms, JSON.stringify(answers)).toBeLessThan(4_000);
        }
        await new Promise((r) => setTimeout(r, 5_000 - (Date.now() - frozen)));
      } finally {
        proxy.resume();
      }
      expect(await outside).toEqual([{ n: 1 }]);
    });

    it('serves every request once it answers again, on every connection of its pool', async () => {
      expect(await answersAgain(s)).toBe(200);
      // Three times the pool at once: every connection of it serves, each with the answer to its own statement.
      const created = await Promise.all(
        Array.from({ length: 3 * POOL_MAX }, (_, i) =>
          s.api('/deals', { method: 'POST', json: { title: `After the thaw ${i}` } }),
        ),
      );
      expect(created.map((r) => r.status)).toEqual(created.map(() => 201));
      const read = await Promise.all(created.map((r) => s.api(`/deals/${r.body.data.id}`)));
      expect(read.map((r) => r.body.data?.deal?.title)).toEqual(created.map((r) => r.body.data.title));
    });

    it('lets a request wait on a database that answers: 3 s on a row lock is not a hang', async () => {
      const deal = await s.api('/deals', { method: 'POST', json: { title: 'Locked for a while' } });
      // Straight to the database, past the proxy.
      const locker = new pg.Client({ connectionString: databaseUrl });
      await locker.connect();
      try {
        await locker.query('begin');
        await locker.query('select 1 from deals where id = $1 for update', [deal.body.data.id]);
        const started = Date.now();
        const patched = s.api(`/deals/${deal.body.data.id}`, { method: 'PATCH', json: { title: 'Waited' } });
        await new Promise((r) => setTimeout(r, 3_000));
        await locker.query('commit');
        const res = await patched;
        expect(res.status, res.text).toBe(200);
        expect(Date.now() - started).toBeGreaterThanOrEqual(3_000);
      } finally {
        await locker.end();
      }
    });
  },
);
