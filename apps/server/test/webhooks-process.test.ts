import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, migratedDataDir } from './harness.ts';
import { firstKeyOf, type ServerProcess, spawnServer, stopProcess } from './server-process.ts';
import { eventually, type Receiver, startReceiver } from './webhook-receiver.ts';

const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL;
const FAST = {
  CRM_WEBHOOKS_ALLOW_PRIVATE: 'true',
  CRM_WEBHOOKS_POLL_INTERVAL_MS: '50',
  CRM_WEBHOOKS_RETRY_SCHEDULE: '200ms,200ms,200ms',
};

/** REST calls against a spawned server with one API key. */
function client(url: () => string | undefined, apiKey: () => string) {
  return async (p: string, init: { method?: string; json?: unknown } = {}) => {
    const res = await fetch(`${url()}/api/v1/crm${p}`, {
      method: init.method ?? 'GET',
      headers: { authorization: `Bearer ${apiKey()}`, 'content-type': 'application/json' },
      body: init.json === undefined ? undefined : JSON.stringify(init.json),
    });
    // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies
    return { status: res.status, body: (await res.json()) as any };
  };
}

describe('webhooks across a crash of the embedded server', () => {
  let dataDir: string;
  let receiver: Receiver;
  let server: ServerProcess | undefined;
  let apiKey = '';
  const api = client(
    () => server?.url,
    () => apiKey,
  );

  beforeAll(async () => {
    dataDir = migratedDataDir('crm-webhooks-crash-');
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await stopProcess(server);
    await receiver?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('events committed right before a SIGKILL are delivered after the restart, under the same webhook-id', async () => {
    // The first attempt hangs, so the killed process holds a claim on it; the timeout is long, so the
    // attempt is still in flight when the process dies.
    const env = { ...FAST, CRM_DATA_DIR: dataDir, CRM_WEBHOOKS_TIMEOUT_MS: '30000' };
    receiver.behave('/crash', { hang: true });
    server = await spawnServer(env);
    apiKey = await firstKeyOf(server);
    const hook = await api('/webhooks', {
      method: 'POST',
      json: { url: receiver.url('/crash'), events: ['deal.created'] },
    });
    expect(hook.status).toBe(201);
    receiver.secretFor('/crash', hook.body.data.secret);

    expect((await api('/deals', { method: 'POST', json: { title: 'in flight at the crash' } })).status).toBe(
      201,
    );
    const [inFlight] = await receiver.waitFor('/crash', (g) => g.length >= 1);
    expect((await api('/deals', { method: 'POST', json: { title: 'committed at the crash' } })).status).toBe(
      201,
    );
    server.child.kill('SIGKILL');
    expect(await server.exited).toBe('SIGKILL');

    receiver.behave('/crash', { status: 200 });
    server = await spawnServer(env);
    const got = await receiver.waitFor('/crash', (g) =>
      ['in flight at the crash', 'committed at the crash'].every((t) =>
        g.slice(1).some((r) => r.payload?.data.title === t),
      ),
    );
    expect(got.every((r) => r.verifyError === undefined)).toBe(true);
    const redelivered = got.slice(1).find((r) => r.payload.data.title === 'in flight at the crash');
    expect(redelivered?.headers['webhook-id']).toBe(inFlight?.headers['webhook-id']);
    const list = await eventually('both deliveries are recorded as succeeded', async () => {
      const res = await api(`/webhooks/${hook.body.data.id}/deliveries`);
      return res.body.data.every((d: { status: string }) => d.status === 'succeeded')
        ? res.body.data
        : undefined;
    });
    expect(list).toHaveLength(2);
  });
});

describe.skipIf(!TEST_DATABASE_URL)(
  `API and worker processes sharing PostgreSQL${TEST_DATABASE_URL ? '' : ' (skipped: TEST_DATABASE_URL is not set)'}`,
  () => {
    let database: Awaited<ReturnType<typeof createDatabase>>;
    let receiver: Receiver;
    let apiServer: ServerProcess | undefined;
    const workers: ServerProcess[] = [];
    let apiKey = '';
    let env: Record<string, string>;
    const api = client(
      () => apiServer?.url,
      () => apiKey,
    );
    const startWorker = async (extra: Record<string, string> = {}) => {
      const w = await spawnServer({ ...env, CRM_ROLE: 'worker', ...extra });
      workers.push(w);
      return w;
    };

    beforeAll(async () => {
      database = await createDatabase(TEST_DATABASE_URL as string);
      receiver = await startReceiver();
      env = { ...FAST, DATABASE_URL: database.url, CRM_WEBHOOKS_TIMEOUT_MS: '1000' };
      // The API process migrates the database and, on this empty one, prints its first key.
      apiServer = await spawnServer({ ...env, CRM_ROLE: 'api' });
      apiKey = await firstKeyOf(apiServer);
    });
    afterAll(async () => {
      await Promise.all([...workers.map((w) => stopProcess(w, 'SIGKILL')), stopProcess(apiServer)]);
      await receiver?.close();
      await database?.drop();
    });

    async function subscribe(p: string) {
      const res = await api('/webhooks', {
        method: 'POST',
        json: { url: receiver.url(p), events: ['deal.created'] },
      });
      expect(res.status).toBe(201);
      receiver.secretFor(p, res.body.data.secret);
      return res.body.data as { id: string };
    }
    /** One deal through POST /deals; many (what deliveries are counted on) 100 to a POST /deals/batch. */
    async function createDeals(titles: string[]) {
      if (titles.length === 1) {
        expect((await api('/deals', { method: 'POST', json: { title: titles[0] } })).status).toBe(201);
        return;
      }
      // Each item is created with its deal.created event, as by POST /deals: 2 requests instead of 150.
      for (let i = 0; i < titles.length; i += 100) {
        const items = titles.slice(i, i + 100).map((title) => ({ title }));
        const res = await api('/deals/batch', { method: 'POST', json: { items } });
        expect(res.status).toBe(201);
        expect(res.body.data).toHaveLength(items.length);
      }
    }

    it('an API-only process delivers nothing itself: events wait in the outbox for a worker', async () => {
      await subscribe('/queued');
      await createDeals(['queued before any worker']);
      await new Promise((r) => setTimeout(r, 700));
      expect(receiver.received('/queued')).toEqual([]);
      await Promise.all([startWorker(), startWorker()]);
      const [got] = await receiver.waitFor('/queued', (g) => g.length >= 1);
      expect(got?.payload.data.title).toBe('queued before any worker');
    });

    it('two workers deliver each of many events exactly once', async () => {
      await subscribe('/many');
      const titles = Array.from({ length: 150 }, (_, i) => `many ${i}`);
      await createDeals(titles);
      await receiver.waitFor('/many', (g) => g.length >= titles.length, 60_000);
      await new Promise((r) => setTimeout(r, 1_000));
      const got = receiver.received('/many');
      expect(got).toHaveLength(titles.length);
      expect(got.every((r) => r.verifyError === undefined)).toBe(true);
      expect(new Set(got.map((r) => r.headers['webhook-id'])).size).toBe(titles.length);
      expect(got.map((r) => r.payload.data.title).sort()).toEqual([...titles].sort());
    });

    it('SIGTERM lets a worker finish the attempt in flight before it exits', async () => {
      receiver.behave('/slowish', { delayMs: 600 });
      const hook = await subscribe('/slowish');
      await createDeals(['finish me']);
      await receiver.waitFor('/slowish', (g) => g.length >= 1);
      const exits = await Promise.all(workers.splice(0).map((w) => stopProcess(w, 'SIGTERM')));
      expect(exits).toEqual([0, 0]);
      const [delivery] = (await api(`/webhooks/${hook.id}/deliveries`)).body.data;
      expect(delivery).toMatchObject({ status: 'succeeded', attempt_count: 1 });
    });

    it('a delivery claimed by a worker that is killed is taken over by another once its lease runs out', async () => {
      receiver.behave('/orphan', { hang: true });
      const hook = await subscribe('/orphan');
      const doomed = await startWorker();
      await createDeals(['orphaned by a crash']);
      const [first] = await receiver.waitFor('/orphan', (g) => g.length >= 1);
      doomed.child.kill('SIGKILL');
      await doomed.exited;
      receiver.behave('/orphan', { status: 200 });
      await startWorker();
      const got = await receiver.waitFor('/orphan', (g) => g.length >= 2, 30_000);
      expect(got[1]?.verifyError).toBeUndefined();
      expect(got[1]?.headers['webhook-id']).toBe(first?.headers['webhook-id']);
      const [delivery] = await eventually('recorded', async () => {
        const list = (await api(`/webhooks/${hook.id}/deliveries`)).body.data;
        return list[0]?.status === 'succeeded' ? list : undefined;
      });
      // The killed worker's attempt left no record; the one that succeeded is the first recorded.
      expect(delivery.attempts.map((a: { response_status: number }) => a.response_status)).toEqual([200]);
    });
  },
);
