import { randomBytes } from 'node:crypto';
import { pruneWebhookHistory } from '@crm/webhooks';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { describeOnEachDatabase, ISO, startTestServer, type TestServer, UUID } from './harness.ts';
import { eventually, type Received, type Receiver, startReceiver } from './webhook-receiver.ts';

/** Fast settings, so that retries, timeouts and deactivation happen within seconds. */
const SETTINGS = {
  CRM_WEBHOOKS_ALLOW_PRIVATE: 'true',
  CRM_WEBHOOKS_POLL_INTERVAL_MS: '50',
  CRM_WEBHOOKS_TIMEOUT_MS: '1000',
  CRM_WEBHOOKS_RETRY_SCHEDULE: '300ms,600ms,1200ms,2400ms,4800ms',
  CRM_WEBHOOKS_MAX_CONSECUTIVE_FAILURES: '5',
  CRM_WEBHOOKS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
};

const DEAL_AND_CONTACT_EVENTS = [
  'deal.created',
  'deal.updated',
  'deal.stage_changed',
  'deal.won',
  'deal.lost',
  'contact.created',
  'contact.updated',
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ofType = (got: Received[], type: string) => got.filter((r) => r.payload?.type === type);
/** The first delivery of each webhook-id, in the order they came. */
const firstOfEach = (got: Received[]) =>
  got.filter((r, i) => got.findIndex((o) => o.headers['webhook-id'] === r.headers['webhook-id']) === i);

describeOnEachDatabase(
  (label) => `webhook delivery on ${label}`,
  (driver) => {
    let s: TestServer;
    let receiver: Receiver;
    let stages: Array<{ id: string; name: string; stage_type: string }>;
    const stage = (name: string) => {
      const found = stages.find((x) => x.name === name);
      if (!found) throw new Error(`no stage ${name}`);
      return found;
    };

    beforeAll(async () => {
      receiver = await startReceiver();
      s = await startTestServer(driver, SETTINGS);
      stages = (await s.api('/pipeline/stages')).body.data;
    });
    afterAll(async () => {
      await s?.stop();
      await receiver?.close();
    });
    afterEach(async () => {
      // Each test subscribes its own endpoints; none outlives it, so events of one test reach no other.
      for (const w of (await s.api('/webhooks')).body.data)
        await s.api(`/webhooks/${w.id}`, { method: 'DELETE' });
    });

    async function subscribe(path: string, events: string[]): Promise<{ id: string; secret: string }> {
      const res = await s.api('/webhooks', { method: 'POST', json: { url: receiver.url(path), events } });
      expect(res.status, res.text).toBe(201);
      receiver.secretFor(path, res.body.data.secret);
      return res.body.data;
    }
    const webhook = async (id: string) =>
      (await s.api('/webhooks')).body.data.find((w: { id: string }) => w.id === id);
    const deliveries = async (id: string) => (await s.api(`/webhooks/${id}/deliveries?limit=100`)).body.data;
    async function createDeal(json: Record<string, unknown>) {
      const res = await s.api('/deals', { method: 'POST', json });
      expect(res.status, res.text).toBe(201);
      return res.body.data;
    }
    async function patchDeal(id: string, json: Record<string, unknown>) {
      const res = await s.api(`/deals/${id}`, { method: 'PATCH', json });
      expect(res.status, res.text).toBe(200);
      return res.body.data;
    }

    it('each operation emits its events, and standardwebhooks accepts every delivery', async () => {
      const hook = await subscribe('/all', DEAL_AND_CONTACT_EVENTS);
      const created = await createDeal({ title: 'Webhook rollout', value: 5000 });
      const renamed = await patchDeal(created.id, { title: 'Webhook rollout, phase 1' });
      const qualified = await patchDeal(created.id, { stage_id: stage('Qualified').id });
      const won = await patchDeal(created.id, { stage_id: stage('Closed Won').id });
      const lost = await patchDeal(created.id, { stage_id: stage('Closed Lost').id });
      await patchDeal(created.id, { title: 'Webhook rollout, phase 1' }); // changes nothing: no event
      const contact = (
        await s.api('/contacts', { method: 'POST', json: { name: 'Ada Hook', deal_id: created.id } })
      ).body.data;
      const contactPatch = await s.api(`/contacts/${contact.id}`, {
        method: 'PATCH',
        json: { title: 'CTO' },
      });

      // At least once: an answer slower than the timeout (a loaded machine) is sent again, with the same
      // webhook-id and body, which is how a receiver tells the copies apart.
      const got = firstOfEach(await receiver.waitFor('/all', (g) => firstOfEach(g).length >= 12));
      await sleep(500);
      const all = receiver.received('/all');
      expect(firstOfEach(all)).toHaveLength(12);
      for (const r of all)
        expect(r.body).toBe(got.find((f) => f.headers['webhook-id'] === r.headers['webhook-id'])?.body);
      expect(got.map((r) => r.verifyError)).toEqual(Array(12).fill(undefined));
      expect(got.map((r) => r.payload.type).sort()).toEqual(
        [
          'deal.created',
          ...Array(4).fill('deal.updated'),
          ...Array(3).fill('deal.stage_changed'),
          'deal.won',
          'deal.lost',
          'contact.created',
          'contact.updated',
        ].sort(),
      );
      for (const r of got) {
        expect(r.headers['content-type']).toBe('application/json');
        expect(r.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
        expect(r.payload.timestamp).toMatch(ISO);
      }

      // deal.created: data is the deal exactly as POST /deals answered it.
      expect(ofType(got, 'deal.created')[0]?.payload).toEqual({
        type: 'deal.created',
        timestamp: expect.stringMatching(ISO),
        data: created,
      });
      // deal.updated: the deal as PATCH answered it, and what changed with its previous value.
      const updates = ofType(got, 'deal.updated').map((r) => r.payload);
      expect(updates).toContainEqual({
        type: 'deal.updated',
        timestamp: expect.stringMatching(ISO),
        data: renamed,
        changes: { title: { from: 'Webhook rollout', to: 'Webhook rollout, phase 1' } },
      });
      expect(updates).toContainEqual(
        expect.objectContaining({
          data: won,
          changes: {
            stage_id: { from: stage('Qualified').id, to: stage('Closed Won').id },
            lifecycle_stage: { from: 'opportunity', to: 'customer' },
          },
        }),
      );
      // Stage events say from which stage to which.
      const ref = (name: string) => ({ id: stage(name).id, name, stage_type: stage(name).stage_type });
      expect(ofType(got, 'deal.stage_changed').map((r) => r.payload)).toContainEqual({
        type: 'deal.stage_changed',
        timestamp: expect.stringMatching(ISO),
        data: qualified,
        stage: { from: ref('Lead'), to: ref('Qualified') },
      });
      expect(ofType(got, 'deal.won')[0]?.payload).toEqual({
        type: 'deal.won',
        timestamp: expect.stringMatching(ISO),
        data: won,
        stage: { from: ref('Qualified'), to: ref('Closed Won') },
      });
      expect(ofType(got, 'deal.lost')[0]?.payload).toEqual({
        type: 'deal.lost',
        timestamp: expect.stringMatching(ISO),
        data: lost,
        stage: { from: ref('Closed Won'), to: ref('Closed Lost') },
      });
      expect(ofType(got, 'contact.created')[0]?.payload).toEqual({
        type: 'contact.created',
        timestamp: expect.stringMatching(ISO),
        data: contact,
      });
      expect(ofType(got, 'contact.updated')[0]?.payload).toEqual({
        type: 'contact.updated',
        timestamp: expect.stringMatching(ISO),
        data: contactPatch.body.data,
        changes: { title: { from: null, to: 'CTO' } },
      });

      // webhook-id is the event's id, one per event, as the deliveries list shows it.
      const listed = await deliveries(hook.id);
      expect(listed).toHaveLength(12);
      const ids = got.map((r) => r.headers['webhook-id']);
      expect(new Set(ids).size).toBe(12);
      expect(new Set(listed.map((d: { event_id: string }) => d.event_id))).toEqual(new Set(ids));
      // One attempt each, or more where an answer came after the timeout (see above); never more copies
      // received than attempts made.
      const copies = receiver.received('/all');
      for (const d of listed) {
        expect(d).toMatchObject({ id: expect.stringMatching(UUID), status: 'succeeded' });
        expect(d.attempt_count).toBeGreaterThanOrEqual(
          copies.filter((r) => r.headers['webhook-id'] === d.event_id).length,
        );
      }
      const after = await webhook(hook.id);
      expect(after).toMatchObject({
        is_active: true,
        failure_count: 0,
        last_triggered_at: expect.stringMatching(ISO),
      });
    });

    it('keeps signing secrets encrypted at rest when an encryption key is configured', async () => {
      const hook = await subscribe('/sealed', ['deal.created']);
      const [row] = await s.sql<{ secret: string }>('select secret from webhook_endpoints where id = ?', [
        hook.id,
      ]);
      expect(row?.secret).toMatch(/^aes-256-gcm:/);
      expect(row?.secret).not.toContain(hook.secret.slice('whsec_'.length));
      const deal = await createDeal({ title: 'Sealed' });
      const [r] = await receiver.waitFor('/sealed', (g) => g.length >= 1);
      expect(r?.verifyError).toBeUndefined();
      expect(r?.payload.data.id).toBe(deal.id);
    });

    it('an endpoint gets only the kinds it subscribed to, and nothing from before it existed', async () => {
      const before = await createDeal({ title: 'Before the endpoint' });
      await patchDeal(before.id, { stage_id: stage('Closed Won').id });
      await sleep(300);
      await subscribe('/won-only', ['deal.won']);
      const deal = await createDeal({ title: 'Won after subscribing' });
      await patchDeal(deal.id, { stage_id: stage('Negotiation').id });
      await patchDeal(deal.id, { stage_id: stage('Closed Won').id });
      await receiver.waitFor('/won-only', (g) => g.length >= 1);
      await sleep(500);
      const got = receiver.received('/won-only');
      expect(got.map((r) => [r.payload.type, r.payload.data.id])).toEqual([['deal.won', deal.id]]);
    });

    it('a filtered endpoint gets only the events whose record meets its filter; the others are no delivery and no failure', async () => {
      await subscribe('/every-deal', ['deal.created', 'deal.updated']);
      const big = await s.api('/webhooks', {
        method: 'POST',
        json: {
          url: receiver.url('/big-deals'),
          events: ['deal.created', 'deal.updated'],
          filter: {
            and: [
              { field: 'value', op: 'gte', value: 50000 },
              { not: { field: 'title', op: 'starts_with', value: 'skip' } },
            ],
          },
        },
      });
      expect(big.status, big.text).toBe(201);
      receiver.secretFor('/big-deals', big.body.data.secret);
      const small = await createDeal({ title: 'Small', value: 10000 });
      const large = await createDeal({ title: 'Large', value: 60000 });
      await createDeal({ title: 'skip me', value: 90000 });
      await createDeal({ title: 'No value' });
      await patchDeal(small.id, { value: 70000 });
      await patchDeal(large.id, { value: 20000 });
      // Every event reached the unfiltered endpoint, so every one was fanned out.
      await receiver.waitFor('/every-deal', (g) => firstOfEach(g).length >= 6);
      await sleep(300);
      const got = firstOfEach(receiver.received('/big-deals'));
      // Deliveries are not ordered: compared as a set.
      expect(got.map((r) => [r.payload.type, r.payload.data.title, r.payload.data.value]).sort()).toEqual([
        ['deal.created', 'Large', 60000],
        ['deal.updated', 'Small', 70000],
      ]);
      expect(got.every((r) => r.verifyError === undefined)).toBe(true);
      expect((await deliveries(big.body.data.id)).map((d: { status: string }) => d.status)).toEqual([
        'succeeded',
        'succeeded',
      ]);
      expect(await webhook(big.body.data.id)).toMatchObject({ failure_count: 0, is_active: true });
    });

    it('a change that rolls back emits nothing', async () => {
      await subscribe('/rollback', DEAL_AND_CONTACT_EVENTS);
      const deal = await createDeal({ title: 'Stays as it is' });
      await receiver.waitFor('/rollback', (g) => g.length >= 1);
      // A failure at COMMIT, after every statement of the request (the outbox insert included) ran.
      await s.sql(`create function crm_test_fail_late() returns trigger language plpgsql as $$
        begin if new.title like 'explode%' then raise exception 'late failure'; end if; return null; end $$`);
      await s.sql(`create constraint trigger crm_test_fail_late after insert or update on deals
        deferrable initially deferred for each row execute function crm_test_fail_late()`);
      try {
        const create = await s.api('/deals', { method: 'POST', json: { title: 'explode on create' } });
        expect(create.status).toBe(500);
        const patch = await s.api(`/deals/${deal.id}`, {
          method: 'PATCH',
          json: { title: 'explode on update' },
        });
        expect(patch.status).toBe(500);
      } finally {
        await s.sql('drop trigger crm_test_fail_late on deals');
        await s.sql('drop function crm_test_fail_late()');
      }
      // And a request refused halfway, after it changed the deal in memory.
      const refused = await s.api(`/deals/${deal.id}`, {
        method: 'PATCH',
        json: { title: 'never stored', stage_id: '01890a5d-ac96-774b-bcce-b302099a8057' },
      });
      expect(refused.status).toBe(400);

      expect(
        await s.sql(
          "select id from outbox_events where payload like '%explode%' or payload like '%never stored%'",
        ),
      ).toEqual([]);
      expect(await s.sql("select id from deals where title like 'explode%'")).toEqual([]);
      expect((await s.api(`/deals/${deal.id}`)).body.data.deal.title).toBe('Stays as it is');
      await sleep(500);
      expect(receiver.received('/rollback').map((r) => r.payload.type)).toEqual(['deal.created']);
    });

    it('a receiver answering 500 then 200 gets retries with the same webhook-id; failure_count rises, then resets', async () => {
      let healthy = false;
      receiver.behave('/flaky', () => (healthy ? { status: 200 } : { status: 500, body: 'x'.repeat(5000) }));
      const hook = await subscribe('/flaky', ['deal.created']);
      const deal = await createDeal({ title: 'Retry me' });
      await eventually('failure_count reaches 2', async () =>
        (await webhook(hook.id)).failure_count >= 2 ? true : undefined,
      );
      healthy = true;
      const got = await receiver.waitFor(
        '/flaky',
        (g) => g.length >= 3 && g.at(-1)?.at !== undefined && healthy,
      );
      const delivered = await eventually('the delivery succeeds', async () => {
        const [d] = await deliveries(hook.id);
        return d?.status === 'succeeded' ? d : undefined;
      });
      const all = receiver.received('/flaky');
      expect(all.length).toBe(delivered.attempt_count);
      expect(got.every((r) => r.verifyError === undefined)).toBe(true);
      expect(new Set(all.map((r) => r.headers['webhook-id']))).toEqual(new Set([delivered.event_id]));
      expect(all.every((r) => r.payload.data.id === deal.id)).toBe(true);
      // Each retry waited at least its scheduled delay less the jitter.
      const first = all[0] as Received;
      const second = all[1] as Received;
      expect(second.at - first.at).toBeGreaterThanOrEqual(300 * 0.8 - 20);

      const attempts = delivered.attempts;
      expect(attempts.map((a: { attempt: number }) => a.attempt)).toEqual(
        attempts.map((_: unknown, i: number) => i + 1),
      );
      const failed = attempts.slice(0, -1);
      expect(failed.length).toBeGreaterThanOrEqual(2);
      for (const a of failed)
        expect(a).toEqual({
          attempt: expect.any(Number),
          attempted_at: expect.stringMatching(ISO),
          duration_ms: expect.any(Number),
          response_status: 500,
          error: 'receiver answered 500',
          response_body: 'x'.repeat(1024),
          succeeded: false,
        });
      expect(attempts.at(-1)).toMatchObject({
        response_status: 200,
        response_body: 'ok',
        succeeded: true,
        error: null,
      });
      expect(await webhook(hook.id)).toMatchObject({
        is_active: true,
        failure_count: 0,
        last_triggered_at: attempts.at(-1).attempted_at,
      });
    });

    it('after the configured consecutive failures the endpoint is deactivated and gets nothing more; re-activation and replay bring it back', async () => {
      receiver.behave('/down', { status: 503 });
      const hook = await subscribe('/down', ['deal.created']);
      const first = await createDeal({ title: 'Lost in the outage' });
      const off = await eventually('the endpoint is deactivated', async () => {
        const w = await webhook(hook.id);
        return w.is_active ? undefined : w;
      });
      expect(off.failure_count).toBe(5);
      expect(receiver.received('/down')).toHaveLength(5);
      const [cancelled] = await deliveries(hook.id);
      expect(cancelled).toMatchObject({ status: 'cancelled', attempt_count: 5, next_attempt_at: null });

      await createDeal({ title: 'While it is off' });
      await sleep(600);
      expect(receiver.received('/down')).toHaveLength(5);
      expect(await deliveries(hook.id)).toHaveLength(1);

      const refused = await s.api(`/webhooks/${hook.id}/deliveries/${cancelled.id}/replay`, {
        method: 'POST',
      });
      expect(refused.status).toBe(409);
      expect(refused.body).toEqual({ error: expect.stringMatching(/inactive/), code: 'webhook_inactive' });

      receiver.behave('/down', { status: 204 });
      const on = await s.api(`/webhooks/${hook.id}/activate`, { method: 'POST' });
      expect(on.status).toBe(200);
      expect(on.body.data).toMatchObject({ id: hook.id, is_active: true, failure_count: 0 });

      const replay = await s.api(`/webhooks/${hook.id}/deliveries/${cancelled.id}/replay`, {
        method: 'POST',
      });
      expect(replay.status, replay.text).toBe(202);
      expect(replay.body.data).toMatchObject({
        id: expect.stringMatching(UUID),
        webhook_id: hook.id,
        event_id: cancelled.event_id,
        event_type: 'deal.created',
        status: 'pending',
        attempt_count: 0,
        attempts: [],
      });
      const after = await createDeal({ title: 'Back on' });
      const got = await receiver.waitFor('/down', (g) => g.length >= 7);
      const delivered = got.slice(5);
      expect(delivered.every((r) => r.verifyError === undefined)).toBe(true);
      expect(delivered.map((r) => r.payload.data.id).sort()).toEqual([first.id, after.id].sort());
      const replayed = delivered.find((r) => r.payload.data.id === first.id);
      expect(replayed?.headers['webhook-id']).toBe(cancelled.event_id);
      await eventually('the replay succeeds', async () => {
        const list = await deliveries(hook.id);
        return list.find(
          (d: { id: string; status: string }) => d.id === replay.body.data.id && d.status === 'succeeded',
        );
      });
    });

    it('a receiver answering 410 Gone is deactivated at once', async () => {
      receiver.behave('/gone', { status: 410 });
      const hook = await subscribe('/gone', ['deal.created']);
      await createDeal({ title: 'Nobody home' });
      const off = await eventually('deactivated', async () => {
        const w = await webhook(hook.id);
        return w.is_active ? undefined : w;
      });
      expect(off.failure_count).toBe(1);
      expect(receiver.received('/gone')).toHaveLength(1);
    });

    it('redirects are not followed: a 3xx is a failed attempt', async () => {
      receiver.behave('/moved', { status: 302, headers: { location: receiver.url('/elsewhere') } });
      const hook = await subscribe('/moved', ['deal.created']);
      await createDeal({ title: 'Redirected' });
      const [d] = await eventually('an attempt is recorded', async () => {
        const list = await deliveries(hook.id);
        return list[0]?.attempts.length ? list : undefined;
      });
      expect(d.attempts[0]).toMatchObject({ response_status: 302, succeeded: false });
      expect(receiver.received('/elsewhere')).toEqual([]);
    });

    it('slow and hanging receivers time out after the configured timeout while the worker keeps delivering to others', async () => {
      receiver.behave('/hang', { hang: true });
      receiver.behave('/slow', { delayMs: 3_000 });
      const hang = await subscribe('/hang', ['deal.created']);
      const slow = await subscribe('/slow', ['deal.created']);
      await subscribe('/fast', ['deal.created']);
      const deals = [];
      for (let i = 0; i < 3; i++) deals.push(await createDeal({ title: `Busy ${i}` }));

      const fast = await receiver.waitFor('/fast', (g) => g.length >= 3);
      expect(fast.map((r) => r.payload.data.id).sort()).toEqual(deals.map((d) => d.id).sort());
      // Both stuck receivers got their requests too; the fast one was not kept waiting behind them.
      await receiver.waitFor('/hang', (g) => g.length >= 3);
      const timedOut = async (id: string) =>
        eventually('a timed-out attempt is recorded', async () => {
          const list = await deliveries(id);
          const attempt = list.flatMap((d: { attempts: unknown[] }) => d.attempts)[0];
          return attempt as
            | { error: string; duration_ms: number; response_status: null; attempted_at: string }
            | undefined;
        });
      const hung = await timedOut(hang.id);
      expect(hung).toMatchObject({
        error: 'timed out after 1000 ms',
        response_status: null,
        succeeded: false,
      });
      expect(hung.duration_ms).toBeGreaterThanOrEqual(990);
      expect(hung.duration_ms).toBeLessThan(5_000);
      const hangDone = Date.parse(hung.attempted_at) + hung.duration_ms;
      expect(Math.max(...fast.map((r) => r.at))).toBeLessThan(hangDone);
      expect(await timedOut(slow.id)).toMatchObject({ error: 'timed out after 1000 ms', succeeded: false });
    });

    it('history past the retention period is pruned; recent history is kept', async () => {
      const hook = await subscribe('/kept', ['deal.created']);
      await createDeal({ title: 'Old news' });
      await receiver.waitFor('/kept', (g) => g.length >= 1);
      const [old] = await eventually('recorded', async () => {
        const list = await deliveries(hook.id);
        return list[0]?.status === 'succeeded' ? list : undefined;
      });
      await createDeal({ title: 'Fresh news' });
      await receiver.waitFor('/kept', (g) => g.length >= 2);
      await eventually('recorded', async () =>
        (await deliveries(hook.id)).every((d: { status: string }) => d.status === 'succeeded')
          ? true
          : undefined,
      );
      await s.sql(
        "update webhook_attempts set created_at = now() - interval '31 days' where delivery_id = ?",
        [old.id],
      );
      await s.sql("update webhook_deliveries set updated_at = now() - interval '31 days' where id = ?", [
        old.id,
      ]);
      await s.sql("update outbox_events set created_at = now() - interval '31 days' where id = ?", [
        old.event_id,
      ]);

      const pruned = await pruneWebhookHistory(s.running.db.orm, 30);
      expect(pruned).toMatchObject({ attempts: 1, deliveries: 1 });
      expect(pruned.events).toBeGreaterThanOrEqual(1);
      const left = await deliveries(hook.id);
      expect(left.map((d: { id: string }) => d.id)).not.toContain(old.id);
      expect(left).toHaveLength(1);
      expect(left[0].attempts).toHaveLength(1);
    });

    it("the dispatcher's poll is read from the queue's index: no index over every event serves its order", async () => {
      // Retention's index over every event was taken for the poll when the statistics still counted an
      // import's events as undispatched: each poll then read every dispatched row first (1-2 s at 4
      // million events). Retention prunes dispatched events only, and its index holds only those.
      const indexes = await s.sql<{ indexname: string; indexdef: string }>(
        "select indexname, indexdef from pg_indexes where tablename = 'outbox_events' order by 1",
      );
      const inCreationOrder = indexes.filter((i) => /USING btree \(created_at/.test(i.indexdef));
      expect(inCreationOrder.map((i) => [i.indexname, i.indexdef.replace(/.* WHERE /, '')])).toEqual([
        ['outbox_events_dispatched', '(dispatched_at IS NOT NULL)'],
        ['outbox_events_undispatched', '(dispatched_at IS NULL)'],
        ['outbox_events_unplaced', '("position" IS NULL)'],
      ]);
    });
  },
);

describeOnEachDatabase(
  (label) => `webhook retries running out on ${label}`,
  (driver) => {
    let s: TestServer;
    let receiver: Receiver;
    beforeAll(async () => {
      receiver = await startReceiver();
      // Two retries, and a deactivation threshold far above them: the schedule runs out first.
      s = await startTestServer(driver, {
        ...SETTINGS,
        CRM_WEBHOOKS_RETRY_SCHEDULE: '100ms,100ms',
        CRM_WEBHOOKS_MAX_CONSECUTIVE_FAILURES: '50',
      });
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

    it('a delivery whose every attempt fails ends failed when the schedule is used up; the endpoint stays active', async () => {
      receiver.behave('/down', { status: 500 });
      const hook = await subscribe('/down');
      await s.api('/deals', { method: 'POST', json: { title: 'Never lands' } });
      const failed = await eventually('the delivery fails for good', async () => {
        const [d] = (await s.api(`/webhooks/${hook}/deliveries`)).body.data;
        return d?.status === 'failed' ? d : undefined;
      });
      // The first attempt and two retries, all with the same webhook-id, and none after.
      expect(failed.attempt_count).toBe(3);
      expect(failed.next_attempt_at).toBeNull();
      expect(failed.attempts.map((a: { response_status: number }) => a.response_status)).toEqual([
        500, 500, 500,
      ]);
      await sleep(500);
      const got = receiver.received('/down');
      expect(got).toHaveLength(3);
      expect(new Set(got.map((r) => r.headers['webhook-id']))).toEqual(new Set([failed.event_id]));
      const listed = (await s.api('/webhooks')).body.data.find((w: { id: string }) => w.id === hook);
      expect(listed).toMatchObject({ is_active: true, failure_count: 3 });
    });

    it('a Retry-After longer than the scheduled delay is honoured', async () => {
      receiver.behave('/busy', (n) => (n === 1 ? { status: 503, headers: { 'Retry-After': '2' } } : {}));
      await subscribe('/busy');
      await s.api('/deals', { method: 'POST', json: { title: 'Later, please' } });
      const got = await receiver.waitFor('/busy', (g) => g.length >= 2, 20_000);
      // The schedule says 100 ms; the receiver asked for 2 s.
      expect((got[1] as Received).at - (got[0] as Received).at).toBeGreaterThanOrEqual(1_900);
      expect(got.every((r) => r.verifyError === undefined)).toBe(true);
    });
  },
);
