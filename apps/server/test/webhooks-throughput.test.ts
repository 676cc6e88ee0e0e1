import { MAX_IN_FLIGHT_PER_ENDPOINT } from '@crm/webhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVERS, startTestServer, type TestServer } from './harness.ts';
import { eventually, type Received, type Receiver, startReceiver } from './webhook-receiver.ts';

/**
 * The poll interval is long on purpose: a delivery much faster than it can only come from the worker
 * being woken (by the database's notification on commit, or by a finished attempt handing its slot on),
 * not from polling.
 */
const POLL_INTERVAL_MS = 2_000;
const SETTINGS = {
  CRM_WEBHOOKS_ALLOW_PRIVATE: 'true',
  CRM_WEBHOOKS_POLL_INTERVAL_MS: String(POLL_INTERVAL_MS),
  CRM_WEBHOOKS_TIMEOUT_MS: '5000',
  CRM_WEBHOOKS_RETRY_SCHEDULE: '700ms,700ms,700ms',
};
const BACKLOG = 300;
/**
 * Deliveries per second the backlog must drain at, at least. The worker that slept a poll interval
 * between rounds of 4 (the per-endpoint cap) made 2/s with this poll interval (8/s with the default, 48/s
 * with a 50 ms one). A woken worker makes 150-300/s here on an idle 2-core machine, 100+ with the other
 * test files running beside it, about 50 on the embedded database with another load test running on the
 * same machine, and 22 on the embedded database in a full suite on a slow evening (2026-11-25; 105-125
 * alone the same hour): the bar is set under that, and still 5 times the old rate.
 */
const MIN_RATE = 10;
/** A single event reaches the receiver within this long of its commit (the target is 50 ms). */
const MAX_SINGLE_LATENCY_MS = 400;

const uniqueIds = (got: Received[]) => new Set(got.map((r) => r.headers['webhook-id'])).size;

for (const { driver, label, skip } of DRIVERS) {
  describe.skipIf(skip)(`webhook throughput and wake-up on ${label}`, () => {
    let s: TestServer;
    let receiver: Receiver;

    beforeAll(async () => {
      receiver = await startReceiver();
      s = await startTestServer(driver, SETTINGS);
    });
    afterAll(async () => {
      await s?.stop();
      await receiver?.close();
    });

    async function subscribe(path: string): Promise<string> {
      const res = await s.api('/webhooks', {
        method: 'POST',
        json: { url: receiver.url(path), events: ['deal.created'] },
      });
      expect(res.status, res.text).toBe(201);
      receiver.secretFor(path, res.body.data.secret);
      return res.body.data.id;
    }

    it(`a single new event is sent within ${MAX_SINGLE_LATENCY_MS} ms of its commit, well under the ${POLL_INTERVAL_MS} ms poll interval`, async () => {
      await subscribe('/single');
      const latencies: number[] = [];
      for (let i = 0; i < 5; i++) {
        // A random phase against any timer the worker might run on.
        await new Promise((r) => setTimeout(r, 50 + Math.random() * 200));
        const sent = Date.now();
        const res = await s.api('/deals', { method: 'POST', json: { title: `Single ${i}` } });
        expect(res.status, res.text).toBe(201);
        const got = await receiver.waitFor(
          '/single',
          (g) => g.some((r) => r.payload?.data?.id === res.body.data.id),
          POLL_INTERVAL_MS * 3,
        );
        const mine = got.find((r) => r.payload?.data?.id === res.body.data.id);
        // From before the request: an upper bound of the time from the commit to the receiver.
        latencies.push((mine?.at ?? Number.POSITIVE_INFINITY) - sent);
      }
      console.info(`${label}: single events arrived ${latencies.join(', ')} ms after their POST was sent`);
      expect(Math.max(...latencies), `latencies ${latencies.join(', ')} ms`).toBeLessThan(
        MAX_SINGLE_LATENCY_MS,
      );
    });

    it(`a backlog of ${BACKLOG} events to one fast endpoint drains at over ${MIN_RATE} deliveries per second, 4 in flight at most`, async () => {
      await subscribe('/backlog');
      // Queued in one transaction, as a burst of writes would leave them: the worker drains them from there.
      await s.sql(
        `insert into outbox_events (id, org_id, type, payload, created_at)
         select gen_random_uuid(), ?, 'deal.created',
                json_build_object('type', 'deal.created', 'timestamp', now(), 'data', json_build_object('n', n))::text,
                now()
         from generate_series(1, ${BACKLOG}) as n`,
        [s.orgA.orgId],
      );
      const committed = Date.now();
      // Long enough for the new worker on a slow machine, far too short for the old one (2/s here).
      const deadline = committed + 20_000;
      // Meanwhile, the endpoint never has more than its 4 attempts in flight (leases that have not run out).
      let maxLeased = 0;
      while (uniqueIds(receiver.received('/backlog')) < BACKLOG && Date.now() < deadline) {
        const [leased] = await s.sql<{ n: string | number }>(
          `select count(*) as n from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id
           where e.url = ? and d.status = 'pending' and d.locked_until >= now()`,
          [receiver.url('/backlog')],
        );
        maxLeased = Math.max(maxLeased, Number(leased?.n));
        await new Promise((r) => setTimeout(r, 50));
      }
      const got = receiver.received('/backlog');
      const last = Math.max(...got.map((r) => r.at));
      const rate = (uniqueIds(got) / Math.max(1, last - committed)) * 1000;
      console.info(
        `${label}: ${uniqueIds(got)} of ${BACKLOG} in ${last - committed} ms, ${rate.toFixed(0)} deliveries/s`,
      );
      expect(uniqueIds(got), `received ${uniqueIds(got)} of ${BACKLOG} within 20 s`).toBe(BACKLOG);
      expect(got.map((r) => r.verifyError).filter(Boolean)).toEqual([]);
      expect(rate, `${rate.toFixed(0)} deliveries/s`).toBeGreaterThan(MIN_RATE);
      expect(maxLeased).toBeGreaterThan(0);
      expect(maxLeased).toBeLessThanOrEqual(MAX_IN_FLIGHT_PER_ENDPOINT);
      // Every delivery is recorded as succeeded, one attempt each (the last records may trail the receipts).
      const counts = async () =>
        (
          await s.sql<{ succeeded: string | number; attempts: string | number }>(
            `select count(*) filter (where d.status = 'succeeded') as succeeded, sum(d.attempt_count) as attempts
             from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id
             where e.url = ?`,
            [receiver.url('/backlog')],
          )
        )[0];
      await eventually('every delivery recorded', async () =>
        Number((await counts())?.succeeded) === BACKLOG ? true : undefined,
      );
      expect(Number((await counts())?.attempts)).toBe(BACKLOG);
      // And sent once each: no attempt had to be made again because recording one failed.
      expect(receiver.received('/backlog')).toHaveLength(BACKLOG);
    });

    it.skipIf(driver !== 'postgresql')(
      `a lost LISTEN connection is re-established, and events in between still arrive${
        driver === 'postgresql'
          ? ''
          : ' (skipped: the embedded database listens in process, no connection to lose)'
      }`,
      async () => {
        await subscribe('/relisten');
        // The worker's wake-up connection, named so (packages/webhooks/src/wakeup.ts).
        const listeners = async () =>
          s.sql<{ pid: number }>(
            `select pid from pg_stat_activity
             where datname = current_database() and application_name = 'crm webhook wake-ups'`,
          );
        const before = await eventually('a LISTEN connection', async () => {
          const rows = await listeners();
          return rows.length > 0 ? rows : undefined;
        });
        for (const { pid } of before) await s.sql('select pg_terminate_backend(?)', [pid]);
        // An event written while the worker may not be listening still arrives (the catch-up pass after
        // reconnecting, or polling).
        const during = await s.api('/deals', { method: 'POST', json: { title: 'While reconnecting' } });
        expect(during.status, during.text).toBe(201);
        await receiver.waitFor(
          '/relisten',
          (g) => g.some((r) => r.payload?.data?.id === during.body.data.id),
          POLL_INTERVAL_MS * 3,
        );
        await eventually('a new LISTEN connection', async () => {
          const rows = await listeners();
          return rows.some((r) => !before.some((b) => b.pid === r.pid)) ? true : undefined;
        });
        // Listening again: a new event is sent at once, not at the next poll.
        const sent = Date.now();
        const after = await s.api('/deals', { method: 'POST', json: { title: 'After reconnecting' } });
        expect(after.status, after.text).toBe(201);
        const got = await receiver.waitFor(
          '/relisten',
          (g) => g.some((r) => r.payload?.data?.id === after.body.data.id),
          POLL_INTERVAL_MS * 3,
        );
        const at =
          got.find((r) => r.payload?.data?.id === after.body.data.id)?.at ?? Number.POSITIVE_INFINITY;
        expect(at - sent).toBeLessThan(MAX_SINGLE_LATENCY_MS);
      },
    );

    it.skipIf(driver !== 'pglite')(
      `an idle embedded server does not poll its database, and a retry is made when due, not at the next poll${
        driver === 'pglite'
          ? ''
          : ' (skipped: PostgreSQL workers keep polling, a wake-up connection can be lost unseen)'
      }`,
      async () => {
        // Transactions the embedded database committed. Each backend reports its counts at most once a
        // second, and PGlite keeps a snapshot of them: read twice, a second apart, to see all until then.
        const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
        const commits = async (on: TestServer) => {
          let n = 0;
          for (const wait of [0, 1_100]) {
            await sleep(wait);
            await on.sql('select pg_stat_clear_snapshot()');
            const [row] = await on.sql<{ n: string | number }>(
              'select xact_commit as n from pg_stat_database where datname = current_database()',
            );
            n = Number(row?.n);
          }
          return n;
        };
        // A worker that polled every 50 ms made two transactions a pass: over 100 in these 4 s.
        const idle = await startTestServer(driver, { ...SETTINGS, CRM_WEBHOOKS_POLL_INTERVAL_MS: '50' });
        try {
          const before = await commits(idle);
          await sleep(3_000);
          // Only the reads of `commits` are left: at least the first two of the second call, which shows
          // the count does move.
          const made = (await commits(idle)) - before;
          expect(made).toBeGreaterThanOrEqual(2);
          expect(made).toBeLessThan(20);
        } finally {
          await idle.stop();
        }

        // A failed attempt's retry, due 560-840 ms later (700 ms ± 20%), is made then: a worker that
        // slept its 2 s poll interval made it about 2 s later.
        let fail = true;
        receiver.behave('/retry', () => (fail ? { status: 500 } : { status: 200 }));
        await subscribe('/retry');
        const created = await s.api('/deals', { method: 'POST', json: { title: 'Retried on time' } });
        expect(created.status, created.text).toBe(201);
        await receiver.waitFor('/retry', (g) => g.length >= 1);
        fail = false;
        const [first, second] = await receiver.waitFor('/retry', (g) => g.length >= 2, POLL_INTERVAL_MS * 3);
        expect(second?.headers['webhook-id']).toBe(first?.headers['webhook-id']);
        expect((second?.at ?? 0) - (first?.at ?? 0)).toBeLessThan(1_500);
      },
    );
  });
}
