import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVERS, startTestServer, type TestServer } from './harness.ts';
import { eventually, type Receiver, startReceiver } from './webhook-receiver.ts';

for (const { driver, label, skip } of DRIVERS) {
  describe.skipIf(skip)(`webhook targets on private addresses, refused by default, on ${label}`, () => {
    let s: TestServer;
    let receiver: Receiver;
    beforeAll(async () => {
      receiver = await startReceiver();
      // The default: CRM_WEBHOOKS_ALLOW_PRIVATE is not set.
      s = await startTestServer(driver, {
        CRM_WEBHOOKS_POLL_INTERVAL_MS: '50',
        CRM_WEBHOOKS_RETRY_SCHEDULE: '1h',
      });
    });
    afterAll(async () => {
      await s?.stop();
      await receiver?.close();
    });

    it.each([
      ['loopback', 'http://127.0.0.1:8080/hook'],
      ['a host name that resolves to loopback', 'http://localhost:8080/hook'],
      ['IPv6 loopback', 'http://[::1]/hook'],
      ['the unspecified address', 'http://0.0.0.0/hook'],
      ['a private network', 'http://10.1.2.3/hook'],
      ['another private network', 'https://192.168.0.10/hook'],
      ['the cloud metadata address', 'http://169.254.169.254/latest/meta-data'],
      ['an IPv4-mapped loopback', 'http://[::ffff:127.0.0.1]/hook'],
      ['a decimal-encoded loopback', 'http://2130706433/hook'],
      ['carrier-grade NAT (another cloud metadata range)', 'http://100.100.100.200/'],
      ['IPv6 unique-local', 'http://[fd00:ec2::254]/'],
      ['a host that does not resolve', 'https://no-such-host.invalid/hook'],
    ])('refuses %s at creation with a 400 naming url, and stores nothing', async (_what, url) => {
      const res = await s.api('/webhooks', { method: 'POST', json: { url, events: ['deal.created'] } });
      expect(res.status, res.text).toBe(400);
      expect(res.body).toEqual({ error: expect.stringMatching(/^url: /), code: 'invalid_request' });
      expect(await s.sql('select id from webhook_endpoints')).toEqual([]);
    });

    it('accepts a public address', async () => {
      const res = await s.api('/webhooks', {
        method: 'POST',
        // A kind no test emits, and deleted at once: nothing is ever sent to this address.
        json: { url: 'https://93.184.215.14/hook', events: ['analysis.completed'] },
      });
      expect(res.status, res.text).toBe(201);
      await s.api(`/webhooks/${res.body.data.id}`, { method: 'DELETE' });
    });

    it('checks again at delivery, on the address connected to: a host that now resolves to loopback gets nothing', async () => {
      // Endpoints whose names resolved to public addresses when they were created and to loopback now
      // (DNS rebinding): stored directly, as creation through the API would refuse them today.
      const targets = [receiver.url('/rebound'), `http://localhost:${receiver.port}/rebound-by-name`];
      const ids: string[] = [];
      for (const url of targets) {
        const id = randomUUID();
        ids.push(id);
        await s.sql(
          `insert into webhook_endpoints (id, org_id, url, events, secret, is_active, failure_count, created_at)
           values (?, ?, ?, '{deal.created}', ?, true, 0, now() - interval '1 minute')`,
          [id, s.orgA.orgId, url, 'plain:whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
        );
      }
      expect((await s.api('/deals', { method: 'POST', json: { title: 'Rebinding' } })).status).toBe(201);
      for (const id of ids) {
        const attempt = await eventually('a refused attempt is recorded', async () => {
          const list = (await s.api(`/webhooks/${id}/deliveries`)).body.data;
          return list[0]?.attempts[0];
        });
        expect(attempt).toMatchObject({
          response_status: null,
          succeeded: false,
          error: expect.stringMatching(/^refused: .*(127\.0\.0\.1|::1).*non-public address/),
        });
      }
      expect(receiver.received()).toEqual([]);
      const listed = (await s.api('/webhooks')).body.data;
      for (const w of listed) expect(w.failure_count).toBe(1);
    });
  });
}
