import { adminRouter, deleteOrganization, setOrgQuota } from '@crm/api';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ZodType } from 'zod';
import {
  addPerson,
  type DashboardUser,
  dashboardClient,
  failure,
  sessionCookie,
  signedIn,
  signIn,
  signInRequest,
} from './dashboard-client.ts';
import {
  describeOnEachDatabase,
  MISSING_ID,
  memoryLogger,
  startTestServer,
  type TestServer,
} from './harness.ts';
import { eventually, type Receiver, startReceiver } from './webhook-receiver.ts';

/**
 * The table of the record each id of a dashboard call's input names, by the call's router and the field
 * (`team.id` is an invitation's). A new call that takes an id fails the test below until it is named here.
 */
const DASHBOARD_IDS: Record<string, string> = {
  'keys.key_id': 'api_keys',
  'team.id': 'invitations',
  'team.user_id': 'users',
  'webhooks.delivery_id': 'webhook_deliveries',
  'webhooks.id': 'webhook_endpoints',
};
/** What a call needs beside its ids to pass its input's checks. */
const BESIDE_IDS: Record<string, Record<string, unknown>> = { 'team.setRole': { role: 'member' } };

type AdminProcedure = {
  _def: { type: 'query' | 'mutation'; inputs: Array<{ shape?: Record<string, unknown> } & ZodType> };
};
type Callable = { query(input: unknown): Promise<unknown>; mutate(input: unknown): Promise<unknown> };

/** Every dashboard call whose input takes an id (`id` or `…_id`), once for each such field. */
const ID_CALLS = Object.entries(
  adminRouter._def.procedures as unknown as Record<string, AdminProcedure>,
).flatMap(([path, procedure]) => {
  const input = procedure._def.inputs[0];
  const idFields = Object.keys(input?.shape ?? {}).filter((f) => /(^|_)id$/.test(f));
  const kindOf = (field: string) => `${path.split('.')[0]}.${field}`;
  const call = (user: DashboardUser, value: unknown) => {
    const callable = path
      .split('.')
      .reduce<unknown>((at, key) => (at as Record<string, unknown>)[key], user.trpc);
    return procedure._def.type === 'query'
      ? (callable as Callable).query(value)
      : (callable as Callable).mutate(value);
  };
  return input
    ? idFields.map((field) => ({ path, field, kind: kindOf(field), kindOf, idFields, input, call }))
    : [];
});

describeOnEachDatabase(
  (label) => `the dashboard's server side on ${label}`,
  (driver) => {
    let s: TestServer;
    let receiver: Receiver;
    const serverLog = memoryLogger('debug');
    let admin: DashboardUser;
    let member: DashboardUser;
    let otherAdmin: DashboardUser;

    beforeAll(async () => {
      s = await startTestServer(
        driver,
        {
          CRM_WEBHOOKS_ALLOW_PRIVATE: 'true',
          CRM_WEBHOOKS_POLL_INTERVAL_MS: '50',
          CRM_USAGE_FLUSH_INTERVAL_MS: '100',
          // A changed quota is seen within 0.2 s, not 5 (the banners' tests waited for it twice a run);
          // limits.test.ts tests the default's refresh.
          CRM_QUOTA_REFRESH_MS: '200',
        },
        { logger: serverLog.logger },
      );
      receiver = await startReceiver();
      admin = await signedIn(s, s.orgA.orgId, 'admin');
      member = await signedIn(s, s.orgA.orgId, 'member');
      otherAdmin = await signedIn(s, s.orgB.orgId, 'admin');
    });
    afterAll(async () => {
      await receiver?.close();
      await s?.stop();
    });

    describe('signing in', () => {
      it('gives an HttpOnly, SameSite session cookie, and no token a page script could read', async () => {
        const person = await addPerson(s, s.orgA.orgId);
        const res = await signInRequest(s, person.email, person.password);
        expect(res.status).toBe(200);
        const cookie = res.headers.getSetCookie().find((c) => c.startsWith('crm.session_token='));
        expect(cookie).toMatch(/HttpOnly/);
        expect(cookie).toMatch(/SameSite=Lax/);
        const body = (await res.json()) as { token?: string; user: { email: string } };
        expect(body.token).toBeUndefined();
        expect(body.user.email).toBe(person.email);
        const session = await fetch(`${s.url}/admin/auth/get-session`, {
          headers: { cookie: sessionCookie(res) },
        });
        const current = (await session.json()) as { session: { token?: string; userId: string } };
        expect(current.session.userId).toEqual(expect.any(String));
        expect(current.session.token).toBeUndefined();
      });

      it('answers a wrong password and an unknown e-mail alike', async () => {
        const person = await addPerson(s, s.orgA.orgId);
        const wrong = await signInRequest(s, person.email, 'not-the-password-at-all');
        const unknown = await signInRequest(s, 'nobody-here@example.com', 'not-the-password-at-all');
        expect(wrong.status).toBe(401);
        expect(unknown.status).toBe(401);
        const message = async (r: Response) => ((await r.json()) as { message: string }).message;
        expect(await message(wrong)).toBe(await message(unknown));
      });

      it('limits attempts per account: the 11th in 15 minutes is 429 with Retry-After, even with the right password', async () => {
        const person = await addPerson(s, s.orgA.orgId);
        for (let i = 0; i < 10; i++)
          expect((await signInRequest(s, person.email, `wrong-password-${i}`)).status).toBe(401);
        const limited = await signInRequest(s, person.email, person.password);
        expect(limited.status).toBe(429);
        expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
        const refused = (await limited.json()) as { code: string; message: string };
        expect(refused.code).toBe('rate_limited');
        // The sign-in page shows this message: a wait in words, not a count of seconds.
        expect(refused.message).toMatch(/^Too many sign-in attempts: try again in about 1[45] minutes$/);
        // Another account from the same address is not held up.
        const other = await addPerson(s, s.orgA.orgId);
        expect((await signInRequest(s, other.email, other.password)).status).toBe(200);
      });

      it('takes sign-ins as JSON only, so a form or multipart body can neither guess nor get past the lockout', async () => {
        const person = await addPerson(s, s.orgA.orgId);
        const url = `${s.url}/admin/auth/sign-in/email`;
        const form = (password: string) =>
          fetch(url, {
            method: 'POST',
            headers: { origin: s.url },
            body: new URLSearchParams({ email: person.email, password }),
          });
        const multipart = (password: string) => {
          const data = new FormData();
          data.set('email', person.email);
          data.set('password', password);
          return fetch(url, { method: 'POST', headers: { origin: s.url }, body: data });
        };
        for (const attempt of [form, multipart]) {
          const refused = await attempt(person.password);
          expect(refused.status).toBe(415);
          expect(await refused.json()).toMatchObject({
            code: 'unsupported_media_type',
            error: 'Content-Type must be application/json',
          });
          expect(refused.headers.getSetCookie()).toEqual([]);
        }
        // A body the limits cannot read the account of is refused before any password is checked.
        const withBom = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', origin: s.url },
          body: `\uFEFF${JSON.stringify({ email: person.email, password: person.password })}`,
        });
        expect(withBom.status).toBe(400);
        for (let i = 0; i < 10; i++)
          expect((await signInRequest(s, person.email, `wrong-password-${i}`)).status).toBe(401);
        expect((await signInRequest(s, person.email, person.password)).status).toBe(429);
        expect((await form(person.password)).status).toBe(415);
        expect((await multipart(person.password)).status).toBe(415);
      });

      it('counts wrong current passwords at a password change against the account, as sign-ins', async () => {
        const person = await addPerson(s, s.orgA.orgId);
        const user = await signIn(s, person.email, person.password);
        const change = (currentPassword: string) =>
          fetch(`${s.url}/admin/auth/change-password`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', origin: s.url, cookie: user.cookie },
            body: JSON.stringify({ currentPassword, newPassword: 'a-brand-new-password-42' }),
          });
        for (let i = 0; i < 10; i++) expect((await change(`wrong-password-${i}`)).status).toBe(400);
        const limited = await change(person.password);
        expect(limited.status).toBe(429);
        expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
        expect((await signInRequest(s, person.email, person.password)).status).toBe(429);
      });

      it('serves only the better-auth endpoints the dashboard uses: resets and sign-ups are 404', async () => {
        for (const path of ['reset-password', 'request-password-reset', 'sign-up/email', 'delete-user']) {
          const res = await fetch(`${s.url}/admin/auth/${path}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', origin: s.url },
            body: JSON.stringify({
              token: 'x',
              newPassword: 'a-brand-new-password-42',
              email: 'a@example.com',
            }),
          });
          expect(res.status, path).toBe(404);
          expect(((await res.json()) as { code: string }).code).toBe('not_found');
        }
      });

      it('stores passwords only as a memory-hard hash', async () => {
        const person = await addPerson(s, s.orgA.orgId);
        const rows = await s.sql<{ password: string }>(
          'select a.password from accounts a join users u on u.id = a.user_id where u.email = ?',
          [person.email],
        );
        expect(rows[0]?.password).not.toContain(person.password);
        expect(rows[0]?.password).toMatch(/^[0-9a-f]{32}:[0-9a-f]{128}$/); // scrypt: salt and key
      });

      it('an expired session answers 401, as does no session at all', async () => {
        const user = await signedIn(s, s.orgA.orgId);
        expect((await user.trpc.me.query()).user.email).toBe(user.email);
        await s.sql(
          "update sessions set expires_at = now() - interval '1 minute' where user_id = (select id from users where email = ?)",
          [user.email],
        );
        expect(await failure(user.trpc.me.query())).toMatchObject({ status: 401, code: 'not_signed_in' });
        expect(await failure(dashboardClient(s, '').keys.list.query())).toMatchObject({
          status: 401,
          code: 'not_signed_in',
        });
      });

      it('changing the password with revokeOtherSessions ends the other sessions; revoke-sessions ends all', async () => {
        const person = await addPerson(s, s.orgA.orgId);
        const first = await signIn(s, person.email, person.password);
        const second = await signIn(s, person.email, person.password);
        const newPassword = 'a-brand-new-password-42';
        const changed = await fetch(`${s.url}/admin/auth/change-password`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', origin: s.url, cookie: second.cookie },
          body: JSON.stringify({ currentPassword: person.password, newPassword, revokeOtherSessions: true }),
        });
        expect(changed.status).toBe(200);
        expect(await failure(first.trpc.me.query())).toMatchObject({ status: 401 });
        expect((await signInRequest(s, person.email, person.password)).status).toBe(401);
        const third = await signIn(s, person.email, newPassword);
        const revoked = await fetch(`${s.url}/admin/auth/revoke-sessions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', origin: s.url, cookie: third.cookie },
          body: '{}',
        });
        expect(revoked.status).toBe(200);
        expect(await failure(third.trpc.me.query())).toMatchObject({ status: 401 });
      });

      it("better-auth's own endpoints refuse a foreign Origin too", async () => {
        const person = await addPerson(s, s.orgA.orgId);
        const user = await signIn(s, person.email, person.password);
        const forged = await fetch(`${s.url}/admin/auth/change-password`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            origin: 'https://evil.example',
            cookie: user.cookie,
          },
          body: JSON.stringify({ currentPassword: person.password, newPassword: 'hijacked-password-1' }),
        });
        expect(forged.status).toBe(403);
        expect((await signInRequest(s, person.email, person.password)).status).toBe(200);
      });

      it('nobody can sign themselves up', async () => {
        const res = await fetch(`${s.url}/admin/auth/sign-up/email`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', origin: s.url },
          body: JSON.stringify({
            email: 'self@example.com',
            password: 'a-long-enough-password',
            name: 'Self',
          }),
        });
        expect(res.status).toBeGreaterThanOrEqual(400);
        expect(await s.sql("select id from users where email = 'self@example.com'")).toEqual([]);
      });
    });

    describe('API keys', () => {
      it('an admin creates a key, sees it once, and it works against the REST API', async () => {
        const created = await admin.trpc.keys.create.mutate({ name: 'from the dashboard' });
        expect(created.api_key).toMatch(/^ck_[A-Za-z0-9_-]{32}$/);
        const deals = await s.api('/deals', { key: created.api_key });
        expect(deals.status).toBe(200);
        const listed = await admin.trpc.keys.list.query();
        const row = listed.find((k) => k.key_id === created.key_id);
        expect(row).toMatchObject({ name: 'from the dashboard', created_by: admin.email, revoked_at: null });
        expect(JSON.stringify(listed)).not.toContain(created.api_key);
        const stored = await s.sql('select * from api_keys where id = ?', [created.key_id]);
        expect(JSON.stringify(stored)).not.toContain(created.api_key);
      });

      it('a name or a link token with a NUL is refused 400 naming it, not taken for a database outage', async () => {
        expect(await failure(admin.trpc.keys.create.mutate({ name: 'bad\u0000name' }))).toMatchObject({
          status: 400,
          message: expect.stringMatching(/^name: must not contain NUL characters/),
        });
        expect(
          await failure(dashboardClient(s, '').invitation.get.query({ token: 'a\u0000b' })),
        ).toMatchObject({
          status: 400,
          message: expect.stringMatching(/^token: must not contain NUL characters/),
        });
      });

      it('a revoked key answers 401 at once, and the audit log names who did both', async () => {
        const created = await admin.trpc.keys.create.mutate({ name: 'short-lived' });
        expect((await s.api('/deals', { key: created.api_key })).status).toBe(200);
        const revoked = await admin.trpc.keys.revoke.mutate({ key_id: created.key_id });
        expect(revoked.revoked_at).toEqual(expect.any(String));
        const res = await s.api('/deals', { key: created.api_key });
        expect(res.status).toBe(401);
        expect(res.body.code).toBe('invalid_api_key');
        const audit = await admin.trpc.audit.list.query({ limit: 10, offset: 0 });
        const actions = audit.data
          .filter((e) => e.target?.includes('short-lived'))
          .map((e) => [e.action, e.actor]);
        expect(actions).toEqual([
          ['api_key.revoked', admin.email],
          ['api_key.created', admin.email],
        ]);
      });

      it('a member sees the keys but cannot create or revoke one (403 from the server)', async () => {
        expect((await member.trpc.keys.list.query()).length).toBeGreaterThan(0);
        expect(await failure(member.trpc.keys.create.mutate({ name: 'nope' }))).toMatchObject({
          status: 403,
          code: 'forbidden',
        });
        expect(await failure(member.trpc.keys.revoke.mutate({ key_id: s.orgA.keyId }))).toMatchObject({
          status: 403,
        });
        expect((await s.api('/deals')).status).toBe(200);
      });

      it("another organization's key answers 404 exactly like a missing one, and stays valid", async () => {
        const other = await failure(otherAdmin.trpc.keys.revoke.mutate({ key_id: s.orgA.keyId }));
        const missing = await failure(otherAdmin.trpc.keys.revoke.mutate({ key_id: MISSING_ID }));
        expect(other).toEqual(missing);
        expect(other.status).toBe(404);
        expect((await s.api('/deals')).status).toBe(200);
        const theirs = await otherAdmin.trpc.keys.list.query();
        expect(theirs.map((k) => k.key_id)).not.toContain(s.orgA.keyId);
      });

      it("a deleted organization's keys answer 401 from the next request on, and its people are signed out", async () => {
        const org = await s.newOrg('Deleted while running');
        const person = await signedIn(s, org.orgId, 'admin');
        expect((await s.api('/deals', { key: org.apiKey })).status).toBe(200);
        expect(await deleteOrganization(s.running.db.orm.em.fork(), org.orgId)).toBe(true);
        const res = await s.api('/deals', { key: org.apiKey });
        expect(res.status).toBe(401);
        expect(await failure(person.trpc.me.query())).toMatchObject({ status: 401 });
        expect((await s.api('/deals')).status).toBe(200);
      });

      it('an Origin with another scheme than the server’s is refused, on tRPC and on better-auth', async () => {
        const httpsTwin = s.url.replace(/^http:/, 'https:');
        const forged = dashboardClient(s, admin.cookie, httpsTwin);
        expect(await failure(forged.keys.create.mutate({ name: 'scheme' }))).toMatchObject({ status: 403 });
        expect(await s.sql("select id from api_keys where name = 'scheme'")).toEqual([]);
        const person = await addPerson(s, s.orgA.orgId);
        const user = await signIn(s, person.email, person.password);
        const changed = await fetch(`${s.url}/admin/auth/change-password`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', origin: httpsTwin, cookie: user.cookie },
          body: JSON.stringify({ currentPassword: person.password, newPassword: 'hijacked-password-1' }),
        });
        expect(changed.status).toBe(403);
        // The server's own origin, as a browser sends it, still works.
        expect((await dashboardClient(s, admin.cookie, s.url).keys.create.mutate({ name: 'own' })).name).toBe(
          'own',
        );
      });

      it('a change without the dashboard’s own Origin is refused and changes nothing', async () => {
        const forged = dashboardClient(s, admin.cookie, 'https://evil.example');
        expect(await failure(forged.keys.create.mutate({ name: 'csrf' }))).toMatchObject({ status: 403 });
        expect(await s.sql("select id from api_keys where name = 'csrf'")).toEqual([]);
      });
    });

    describe('usage', () => {
      it('shows the same numbers as GET /usage, and today in the per-day chart', async () => {
        const org = await s.newOrg('Usage org');
        const person = await addPerson(s, org.orgId);
        const user = await signIn(s, person.email, person.password);
        for (let i = 0; i < 5; i++) expect((await s.api('/deals', { key: org.apiKey })).status).toBe(200);
        const rest = (await s.api('/usage', { key: org.apiKey })).body.data;
        const summary = await user.trpc.usage.summary.query();
        // GET /usage counts itself; the dashboard's reads count nothing.
        expect(summary.usage.quotas).toEqual(rest.quotas);
        expect(summary.usage.rate_limits).toEqual(rest.rate_limits);
        expect(summary.daily).toHaveLength(30);
        const today = new Date().toISOString().slice(0, 10);
        expect(summary.daily.at(-1)?.day).toBe(today);
        await eventually('the day bucket', async () => {
          const daily = (await user.trpc.usage.summary.query()).daily.at(-1);
          return daily?.api_calls === 6 ? daily : undefined;
        });
      });

      it('the banner (me) follows the quota now: 80%, used up, and gone once the quota is raised again', async () => {
        const org = await s.newOrg('Alert org');
        const person = await addPerson(s, org.orgId);
        const user = await signIn(s, person.email, person.password);
        for (let i = 0; i < 8; i++) await s.api('/deals', { key: org.apiKey });
        const notices = async () =>
          (await user.trpc.me.query()).quota_notices.map((n) => [n.quota, n.reached, n.used, n.limit]);
        expect(await notices()).toEqual([]);
        await setOrgQuota(s.running.db.orm.em.fork(), org.orgId, { api_calls: 10 });
        await eventually(
          'the 80% notice',
          async () => ((await notices()).length === 1 ? true : undefined),
          15_000,
        );
        expect(await notices()).toEqual([['api_calls', 80, 8, 10]]);
        await s.api('/deals', { key: org.apiKey });
        await s.api('/deals', { key: org.apiKey });
        // 10 of 10: the next call is refused, and the banner says so rather than "95%".
        expect((await s.api('/deals', { key: org.apiKey })).status).toBe(429);
        expect(await notices()).toEqual([['api_calls', 100, 10, 10]]);
        // Raised again: no banner, though the month's alerts stay recorded on Usage.
        await setOrgQuota(s.running.db.orm.em.fork(), org.orgId, { api_calls: null });
        await eventually(
          'no notice',
          async () => ((await notices()).length === 0 ? true : undefined),
          15_000,
        );
        const { alerts } = (await user.trpc.usage.summary.query()).usage;
        expect(alerts.map((a) => [a.quota, a.threshold_percent])).toEqual([
          ['api_calls', 80],
          ['api_calls', 95],
        ]);
      });
    });

    describe('webhooks', () => {
      it('create (secret once), send a test event to a local receiver, see its attempt, replay it', async () => {
        const path = `/dash-${driver}`;
        const created = await admin.trpc.webhooks.create.mutate({
          url: receiver.url(path),
          events: ['deal.created'],
        });
        expect(created.secret).toMatch(/^whsec_/);
        receiver.secretFor(path, created.secret);
        expect(JSON.stringify(await admin.trpc.webhooks.list.query())).not.toContain(created.secret);

        const delivery = await admin.trpc.webhooks.sendTest.mutate({ id: created.id });
        const [got] = await receiver.waitFor(path, (r) => r.length >= 1);
        expect(got?.verifyError).toBeUndefined();
        expect(got?.payload.type).toBe('webhook.test');
        expect(got?.headers['webhook-id']).toBe(delivery.event_id);

        const log = await eventually('the attempt in the log', async () => {
          const page = await admin.trpc.webhooks.deliveries.query({ id: created.id });
          return page.data[0]?.status === 'succeeded' ? page : undefined;
        });
        expect(log.data[0]?.attempts[0]).toMatchObject({ response_status: 200, succeeded: true });
        const listed = (await admin.trpc.webhooks.list.query()).find((w) => w.id === created.id);
        expect(listed?.last_delivery?.status).toBe('succeeded');
        // The REST API lists the same delivery to a developer, its event type as sent.
        const rest = await s.api(`/webhooks/${created.id}/deliveries`);
        expect(rest.status, rest.text).toBe(200);
        expect((rest.body as { data: unknown[] }).data[0]).toMatchObject({
          id: delivery.id,
          event_type: 'webhook.test',
          status: 'succeeded',
        });

        await admin.trpc.webhooks.replay.mutate({ id: created.id, delivery_id: delivery.id });
        const again = await receiver.waitFor(path, (r) => r.length >= 2);
        expect(again[1]?.headers['webhook-id']).toBe(delivery.event_id);
        expect(again[1]?.verifyError).toBeUndefined();

        // Nobody else received the test event.
        expect(
          await s.sql(
            "select count(*)::int as n from webhook_deliveries d join outbox_events o on o.id = d.event_id where o.type = 'webhook.test' and d.endpoint_id <> ?",
            [created.id],
          ),
        ).toEqual([{ n: 0 }]);
      });

      it('a member reads webhooks but cannot create, delete or test them; another org sees 404', async () => {
        const created = await admin.trpc.webhooks.create.mutate({
          url: receiver.url('/member'),
          events: ['deal.won'],
        });
        expect((await member.trpc.webhooks.list.query()).some((w) => w.id === created.id)).toBe(true);
        expect(await failure(member.trpc.webhooks.delete.mutate({ id: created.id }))).toMatchObject({
          status: 403,
        });
        expect(await failure(member.trpc.webhooks.sendTest.mutate({ id: created.id }))).toMatchObject({
          status: 403,
        });
        expect(
          await failure(
            member.trpc.webhooks.create.mutate({ url: receiver.url('/x'), events: ['deal.won'] }),
          ),
        ).toMatchObject({ status: 403 });
        const other = await failure(otherAdmin.trpc.webhooks.delete.mutate({ id: created.id }));
        expect(other).toEqual(await failure(otherAdmin.trpc.webhooks.delete.mutate({ id: MISSING_ID })));
        expect(other.status).toBe(404);
        await admin.trpc.webhooks.delete.mutate({ id: created.id });
        const audit = await admin.trpc.audit.list.query();
        expect(audit.data.slice(0, 2).map((e) => e.action)).toEqual(['webhook.deleted', 'webhook.created']);
      });

      it('verifies the test event with the standardwebhooks package and the secret shown once', async () => {
        const path = `/verify-${driver}`;
        const created = await admin.trpc.webhooks.create.mutate({
          url: receiver.url(path),
          events: ['deal.won'],
        });
        await admin.trpc.webhooks.sendTest.mutate({ id: created.id });
        const [got] = await receiver.waitFor(path, (r) => r.length >= 1);
        const payload = new Webhook(created.secret).verify(got?.body ?? '', got?.headers ?? {}) as {
          data: { webhook_id: string };
        };
        expect(payload.data.webhook_id).toBe(created.id);
      });
    });

    describe('team', () => {
      it('an invitation link lets someone join once, signed in at once, with the role it names', async () => {
        const invite = await admin.trpc.team.invite.mutate({ role: 'member' });
        expect(invite.url).toMatch(new RegExp(`^${s.url}/admin/invite/[A-Za-z0-9_-]{32}$`));
        const token = invite.url.split('/').at(-1) as string;
        const anonymous = dashboardClient(s, '');
        expect(await anonymous.invitation.get.query({ token })).toMatchObject({
          org_name: 'Org A',
          role: 'member',
        });
        const res = await fetch(`${s.url}/admin/trpc/invitation.accept`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', origin: s.url },
          body: JSON.stringify({
            token,
            name: 'New Person',
            email: 'New.Person@Example.com',
            password: 'a-long-password-123',
          }),
        });
        expect(res.status, await res.clone().text()).toBe(200);
        const joined = dashboardClient(s, sessionCookie(res));
        expect((await joined.me.query()).user).toMatchObject({
          email: 'new.person@example.com',
          role: 'member',
        });
        // Used: the link no longer works.
        expect(await failure(anonymous.invitation.get.query({ token }))).toMatchObject({ status: 404 });
        expect(
          await failure(
            anonymous.invitation.accept.mutate({
              token,
              name: 'Again',
              email: 'again@example.com',
              password: 'a-long-password-123',
            }),
          ),
        ).toMatchObject({ status: 404 });
        const audit = await admin.trpc.audit.list.query();
        expect(audit.data.map((e) => e.action)).toEqual(
          expect.arrayContaining(['member.invited', 'member.joined']),
        );
      });

      it('an expired invitation does not work', async () => {
        const invite = await admin.trpc.team.invite.mutate({ role: 'admin' });
        await s.sql("update invitations set expires_at = now() - interval '1 second' where id = ?", [
          invite.id,
        ]);
        const token = invite.url.split('/').at(-1) as string;
        expect(await failure(dashboardClient(s, '').invitation.get.query({ token }))).toMatchObject({
          status: 404,
        });
      });

      it('the last admin can be neither removed nor demoted; a member cannot invite', async () => {
        const org = await s.newOrg('Solo org');
        const solo = await signedIn(s, org.orgId, 'admin');
        const { members } = await solo.trpc.team.list.query();
        const me = members[0]?.user_id as string;
        expect(await failure(solo.trpc.team.remove.mutate({ user_id: me }))).toMatchObject({
          status: 409,
          code: 'last_admin',
        });
        expect(await failure(solo.trpc.team.setRole.mutate({ user_id: me, role: 'member' }))).toMatchObject({
          status: 409,
          code: 'last_admin',
        });
        expect(await failure(member.trpc.team.invite.mutate({ role: 'admin' }))).toMatchObject({
          status: 403,
        });
        // With a second admin, the first can step down.
        const second = await addPerson(s, org.orgId, 'admin');
        expect(await solo.trpc.team.setRole.mutate({ user_id: me, role: 'member' })).toMatchObject({
          role: 'member',
        });
        expect(await failure(solo.trpc.team.invite.mutate({ role: 'member' }))).toMatchObject({
          status: 403,
        });
        expect(second.user_id).toEqual(expect.any(String));
      });

      it("another organization's member id answers 404 like a missing one", async () => {
        const { members } = await admin.trpc.team.list.query();
        const target = members.find((m) => m.role === 'member')?.user_id as string;
        const other = await failure(otherAdmin.trpc.team.remove.mutate({ user_id: target }));
        expect(other).toEqual(await failure(otherAdmin.trpc.team.remove.mutate({ user_id: MISSING_ID })));
        expect(other.status).toBe(404);
        expect((await otherAdmin.trpc.team.list.query()).members.map((m) => m.user_id)).not.toContain(target);
      });

      it('a removed person is signed out at once', async () => {
        const person = await signedIn(s, s.orgA.orgId, 'member');
        const id = (await admin.trpc.team.list.query()).members.find((m) => m.email === person.email)
          ?.user_id as string;
        await admin.trpc.team.remove.mutate({ user_id: id });
        expect(await failure(person.trpc.me.query())).toMatchObject({ status: 401 });
      });
    });

    describe('custom fields', () => {
      const auditOf = (action: string) =>
        s.sql<{ actor: string; target: string; details: string | null }>(
          'select actor, target, details from audit_log where org_id = ? and action = ? order by at',
          [s.orgA.orgId, action],
        );

      it('an admin creates and archives fields through the service’s own rules, each change in the audit log; a member reads and is refused changes', async () => {
        const list = await member.trpc.fields.list.query();
        // The objects are the server's one list; the types say which inputs each takes.
        expect(list.objects.map((o) => o.object)).toEqual(['deals', 'contacts', 'companies']);
        expect(list.types.find((t) => t.type === 'select')).toMatchObject({ options: true, unique: true });
        expect(list.types.find((t) => t.type === 'number')).toMatchObject({ range: true, text: false });

        const created = await admin.trpc.fields.create.mutate({
          object: 'deals',
          key: 'dash_region',
          type: 'select',
          label: 'Region',
          options: [{ value: 'emea', label: 'EMEA' }, { value: 'apac' }],
        });
        expect(created).toMatchObject({ key: 'dash_region', label: 'Region', archived: false });
        expect(await auditOf('custom_field.created')).toEqual([
          { actor: admin.email, target: 'deals.dash_region', details: 'select' },
        ]);
        const deals = (await member.trpc.fields.list.query()).objects.find((o) => o.object === 'deals');
        expect(deals?.fields.map((f) => f.key)).toContain('dash_region');
        // The REST API sees the same field.
        expect((await s.api('/custom-fields/deals')).body.data.map((f: { key: string }) => f.key)).toContain(
          'dash_region',
        );

        // The service's errors, as it words them (the form shows them by the input they name).
        const refused = (input: Record<string, unknown>) =>
          failure(admin.trpc.fields.create.mutate({ object: 'deals', type: 'text', ...input } as never));
        expect(await refused({ key: 'Bad Key' })).toMatchObject({
          status: 400,
          message: expect.stringMatching(/^key: must be snake_case/),
        });
        expect(await refused({ key: 'dash_region' })).toMatchObject({
          status: 409,
          code: 'conflict',
          message: 'key: deals already has a custom field dash_region',
        });
        expect(await refused({ key: 'dash_code', validation: { pattern: '(?=x)' } })).toMatchObject({
          status: 400,
          message: expect.stringMatching(/^validation\.pattern: not a regular expression RE2 can run/),
        });
        expect(await refused({ key: 'dash_tier', options: [{ value: 'a' }] })).toMatchObject({
          status: 400,
          message: 'options: only select and multi_select fields take options, not text',
        });

        // A refused change records nothing: the entry commits with the change.
        expect(await auditOf('custom_field.created')).toHaveLength(1);

        for (const call of [
          () => member.trpc.fields.create.mutate({ object: 'deals', key: 'sneaky', type: 'text' }),
          () => member.trpc.fields.archive.mutate({ object: 'deals', key: 'dash_region' }),
          () => member.trpc.fields.schemaApply.mutate({ text: '{"version": 1, "objects": {}}' }),
        ])
          expect(await failure(call())).toMatchObject({ status: 403, code: 'forbidden' });

        expect(await admin.trpc.fields.archive.mutate({ object: 'deals', key: 'dash_region' })).toMatchObject(
          {
            archived: true,
          },
        );
        // Archiving again changes nothing and records nothing.
        await admin.trpc.fields.archive.mutate({ object: 'deals', key: 'dash_region' });
        expect(await auditOf('custom_field.archived')).toEqual([
          { actor: admin.email, target: 'deals.dash_region', details: null },
        ]);
        expect(
          await failure(admin.trpc.fields.archive.mutate({ object: 'deals', key: 'nope' })),
        ).toMatchObject({
          status: 404,
        });
        // Another organization sees none of it.
        const theirs = await otherAdmin.trpc.fields.list.query();
        expect(theirs.objects.flatMap((o) => o.fields.map((f) => f.key))).not.toContain('dash_region');
      });

      it('a pasted schema file is read as the CLI reads one: its plan for anyone, its apply for admins, recorded', async () => {
        expect(await failure(member.trpc.fields.schemaPlan.mutate({ text: '{"version": 1,' }))).toMatchObject(
          {
            status: 400,
            message: expect.stringMatching(/^not JSON: /),
          },
        );
        expect(
          await failure(member.trpc.fields.schemaPlan.mutate({ text: '{"version": 2, "objects": {}}' })),
        ).toMatchObject({ status: 400, message: expect.stringMatching(/^version: /) });
        const file = JSON.stringify({
          version: 1,
          objects: { contacts: [{ key: 'dash_tier', type: 'select', options: [{ value: 'gold' }] }] },
        });
        const plan = await member.trpc.fields.schemaPlan.mutate({ text: file });
        expect(plan).toEqual({
          steps: [{ object: 'contacts', key: 'dash_tier', action: 'add' }],
          applicable: true,
        });
        const applied = await admin.trpc.fields.schemaApply.mutate({ text: file });
        expect(applied.fields.map((f) => f.key)).toContain('dash_tier');
        expect(await auditOf('custom_fields.applied')).toEqual([
          { actor: admin.email, target: 'schema file', details: 'added contacts.dash_tier' },
        ]);
        // Nothing left to do: the plan is empty, and applying it records nothing.
        expect((await admin.trpc.fields.schemaPlan.mutate({ text: file })).steps).toEqual([]);
        await admin.trpc.fields.schemaApply.mutate({ text: file });
        expect(await auditOf('custom_fields.applied')).toHaveLength(1);
      });
    });

    describe("another organization's ids", () => {
      it('every dashboard call that takes an id answers another organization’s record as a missing one, and changes nothing', async () => {
        const unknown = ID_CALLS.filter((c) => !(c.kind in DASHBOARD_IDS)).map(
          (c) => `${c.path} takes ${c.field}: say in DASHBOARD_IDS which table its record is kept in`,
        );
        expect(unknown).toEqual([]);
        expect(ID_CALLS.length).toBeGreaterThanOrEqual(11);
        /** A fresh record of each kind, in the organization `user` administers, by table. */
        const records = async (user: DashboardUser, orgId: string): Promise<Record<string, string>> => {
          const webhook = await user.trpc.webhooks.create.mutate({
            url: receiver.url(`/ids-${orgId}`),
            events: ['deal.won'],
          });
          const delivery = await user.trpc.webhooks.sendTest.mutate({ id: webhook.id });
          await eventually('the test delivery done', async () => {
            const page = await user.trpc.webhooks.deliveries.query({ id: webhook.id });
            return page.data[0]?.status === 'succeeded' ? true : undefined;
          });
          return {
            api_keys: (await user.trpc.keys.create.mutate({ name: 'isolation' })).key_id,
            webhook_endpoints: webhook.id,
            webhook_deliveries: delivery.id,
            users: (await addPerson(s, orgId, 'member')).user_id,
            invitations: (await user.trpc.team.invite.mutate({ role: 'member' })).id,
          };
        };
        // Org B's admin calls with org A's ids; a call's other ids are B's own.
        const theirs = await records(admin, s.orgA.orgId);
        const own = await records(otherAdmin, s.orgB.orgId);
        const tables = [...new Set([...Object.values(DASHBOARD_IDS), 'audit_log'])];
        /** Org A's records as they are, and how many rows each table holds of either organization. */
        const state = async () => ({
          rows: await Promise.all(
            Object.entries(theirs).map(([table, id]) => s.sql(`select * from ${table} where id = ?`, [id])),
          ),
          counts: await Promise.all(
            tables.map((table) =>
              s.sql(`select count(*)::int as n from ${table} where org_id in (?, ?)`, [
                s.orgA.orgId,
                s.orgB.orgId,
              ]),
            ),
          ),
        });
        for (const c of ID_CALLS) {
          const what = `${c.path} with org A's ${c.field}`;
          const input = (id: string) => ({
            ...BESIDE_IDS[c.path],
            ...Object.fromEntries(c.idFields.map((f) => [f, own[DASHBOARD_IDS[c.kindOf(f)] as string]])),
            [c.field]: id,
          });
          expect(
            c.input.safeParse(input(MISSING_ID)).success,
            `${what}: add what else it needs to BESIDE_IDS`,
          ).toBe(true);
          const before = await state();
          const foreign = await failure(
            c.call(otherAdmin, input(theirs[DASHBOARD_IDS[c.kind] as string] as string)),
          ).catch((err: Error) => {
            throw new Error(`${what}: ${err.message}`);
          });
          const missing = await failure(c.call(otherAdmin, input(MISSING_ID)));
          expect(missing, what).toMatchObject({ status: 404, code: 'not_found' });
          expect(foreign, what).toEqual(missing);
          expect(await state(), what).toEqual(before);
        }
      });
    });

    describe('the edge', () => {
      it('/ leads to /admin/, and /favicon.ico is not an error', async () => {
        const root = await fetch(`${s.url}/`, { redirect: 'manual' });
        expect(root.status).toBe(302);
        expect(root.headers.get('location')).toBe('/admin/');
        const icon = await fetch(`${s.url}/favicon.ico`, { redirect: 'manual' });
        expect(icon.status).toBeLessThan(400);
      });

      it('pages carry a CSP without unsafe-inline, frame-ancestors none and nosniff; index.html is not cached', async () => {
        const page = await fetch(`${s.url}/admin/keys`);
        const csp = page.headers.get('content-security-policy') ?? '';
        expect(csp).toContain("frame-ancestors 'none'");
        expect(csp).toContain("script-src 'self'");
        expect(csp).not.toContain('unsafe-inline');
        expect(page.headers.get('x-content-type-options')).toBe('nosniff');
        if (page.status === 200) {
          expect(page.headers.get('cache-control')).toBe('no-cache');
          const html = await page.text();
          expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // no inline script
          const asset = /\/admin\/assets\/[^"]+\.js/.exec(html)?.[0];
          if (asset) {
            const js = await fetch(`${s.url}${asset}`);
            expect(js.status).toBe(200);
            expect(js.headers.get('cache-control')).toContain('immutable');
          }
        } else {
          expect(page.status).toBe(503); // not built in this checkout
        }
      });

      it('never logs a plaintext key, password or signing secret', async () => {
        const person = await addPerson(s, s.orgA.orgId);
        const user = await signIn(s, person.email, person.password);
        const key = await user.trpc.keys.create.mutate({ name: 'log check' });
        const hook = await user.trpc.webhooks.create.mutate({
          url: receiver.url('/log'),
          events: ['deal.won'],
        });
        const invite = await user.trpc.team.invite.mutate({ role: 'member' });
        const written = serverLog.raw.join('');
        expect(written.length).toBeGreaterThan(0);
        for (const secret of [
          key.api_key,
          person.password,
          hook.secret,
          invite.url.split('/').at(-1) as string,
        ])
          expect(written).not.toContain(secret);
      });
    });
  },
);

describe('the dashboard behind HTTPS (CRM_PUBLIC_URL=https://…), on embedded PGlite', () => {
  const PUBLIC = 'https://crm.example.test';
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer('pglite', { CRM_PUBLIC_URL: PUBLIC });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('sets a Secure, __Secure- session cookie, and accepts changes only from the public origin', async () => {
    const person = await addPerson(s, s.orgA.orgId);
    const res = await fetch(`${s.url}/admin/auth/sign-in/email`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: PUBLIC },
      body: JSON.stringify({ email: person.email, password: person.password }),
    });
    expect(res.status).toBe(200);
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('__Secure-crm.session_token='));
    expect(cookie).toMatch(/; Secure/);
    expect(cookie).toMatch(/HttpOnly/);
    const session = (cookie as string).split(';')[0] as string;
    expect(await failure(dashboardClient(s, session, s.url).keys.create.mutate({ name: 'x' }))).toMatchObject(
      {
        status: 403,
      },
    );
    const created = await dashboardClient(s, session, PUBLIC).keys.create.mutate({ name: 'over https' });
    expect(created.api_key).toMatch(/^ck_/);
    const invite = await dashboardClient(s, session, PUBLIC).team.invite.mutate({ role: 'member' });
    expect(invite.url.startsWith(`${PUBLIC}/admin/invite/`)).toBe(true);
  });
});
