import { existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AxeBuilder } from '@axe-core/playwright';
import { createInvitation, INVITATION_PATH, setOrgQuota } from '@crm/api';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DASHBOARD_DIST } from '../src/dashboard.ts';
import { addPerson } from './dashboard-client.ts';
import { DRIVERS, startTestServer, type TestServer } from './harness.ts';
import { eventually, type Receiver, startReceiver } from './webhook-receiver.ts';

const CHROMIUM = '/usr/bin/chromium';
const missing = !existsSync(CHROMIUM)
  ? `skipped: ${CHROMIUM} not found (apt-get install chromium)`
  : !existsSync(path.join(DASHBOARD_DIST, 'index.html'))
    ? 'skipped: the dashboard is not built (npm run build)'
    : undefined;

/** Where UPDATE_SCREENSHOTS=1 puts the screenshots of every page (docs/dashboard.md shows them). */
const SCREENSHOTS = fileURLToPath(new URL('../../../docs/screenshots', import.meta.url));

async function checkAccessibility(page: Page, name: string): Promise<void> {
  // Every rule runs on every element as before; only violations are reported in full (axe's resultTypes:
  // the passes and the incomplete ones, which nothing here reads, keep one element each instead of a
  // selector worked out for every element that passed).
  const results = await new AxeBuilder({ page }).options({ resultTypes: ['violations'] }).analyze();
  const serious = results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(serious.map((v) => `${name}: ${v.id} ${v.help}`)).toEqual([]);
}

/** Opens `url` and tells whether the quota banner says `text` once the page has loaded. */
async function bannerShows(page: Page, url: string, text: RegExp): Promise<true | undefined> {
  await page.goto(url);
  await page.getByRole('heading', { level: 1 }).waitFor();
  return page
    .getByRole('status')
    .filter({ hasText: text })
    .waitFor({ timeout: 1500 })
    .then(
      () => true as const,
      () => undefined,
    );
}

/** Whether both databases' runs take the steps below (each page's accessibility is checked in one of them). */
const BOTH_RUNS = !missing && DRIVERS.every((d) => !d.skip);

// The two databases' runs go side by side (each has its own server and browser), each a session whose
// steps follow one another: the file takes the longer run's time instead of the sum.
for (const { driver, label, skip } of DRIVERS) {
  const reason = skip ? label : missing;
  describe.skipIf(Boolean(reason))(
    `the dashboard in Chromium on ${reason ? `${label} (${reason})` : label}`,
    { concurrent: true },
    () => {
      describe('an admin session, step by step', { concurrent: false }, () => {
        let s: TestServer;
        let receiver: Receiver;
        let browser: Browser;
        let admin: BrowserContext;
        let page: Page;
        const cspViolations: string[] = [];
        // The pages' markup does not follow the database: axe checks each page once (1.7 s a page here, 57 s
        // of the file's 75 when both runs checked every page). Both runs take the same steps, so the n-th page
        // checked is the same page in both: with both databases, the embedded run checks the even ones and
        // the PostgreSQL run the odd ones, which keeps the two runs, side by side, about as long as each
        // other (the embedded run, with all 21 checks and the pictures, took 93 s to PostgreSQL's 52); with
        // the embedded database alone, it checks them all.
        let pagesSeen = 0;
        const checkPage = (p: Page, name: string) => {
          const checkedBy = !BOTH_RUNS || pagesSeen++ % 2 === 0 ? 'pglite' : 'postgresql';
          return driver === checkedBy ? checkAccessibility(p, name) : Promise.resolve();
        };
        // docs/dashboard.md's pictures come from the embedded run (into the temporary folder unless
        // UPDATE_SCREENSHOTS is set). No assertion reads them, and the pages' looks do not follow the
        // database: the PostgreSQL run takes none (its ~30 full-page pictures went unseen). Full pages only
        // for the docs: a full page is laid out again at its whole height and encoded at its size, where the
        // temporary folder's pictures are for a quick look at the first screen.
        const updating = Boolean(process.env.UPDATE_SCREENSHOTS);
        const shots = updating ? SCREENSHOTS : path.join(tmpdir(), 'crm-dashboard-screenshots', driver);

        const shoot = (p: Page, name: string) =>
          driver === 'pglite'
            ? p.screenshot({ path: path.join(shots, `${name}.png`), fullPage: updating })
            : Promise.resolve();

        async function newPage(context: BrowserContext): Promise<Page> {
          const p = await context.newPage();
          p.on('console', (m) => {
            if (/Content Security Policy/i.test(m.text())) cspViolations.push(m.text());
          });
          return p;
        }

        /** Opens an invitation link and joins through the page, as a person does. */
        async function join(p: Page, link: string, email: string): Promise<void> {
          await p.goto(link);
          await p.getByLabel('Your name').fill('Test Person');
          const emailField = p.getByLabel('Email');
          if (await emailField.isEditable()) await emailField.fill(email);
          await p.getByLabel('Password', { exact: true }).fill('correct-horse-battery');
          await p.getByLabel('Confirm password').fill('correct-horse-battery');
          await p.getByRole('button', { name: /^Join / }).click();
          await p.waitForURL(/\/admin\/keys$/);
        }

        beforeAll(async () => {
          mkdirSync(shots, { recursive: true });
          s = await startTestServer(driver, {
            CRM_WEBHOOKS_ALLOW_PRIVATE: 'true',
            CRM_WEBHOOKS_POLL_INTERVAL_MS: '50',
            CRM_USAGE_FLUSH_INTERVAL_MS: '100',
            // A changed quota is seen within 0.2 s, not 5 (the banners' test waited for it three times).
            CRM_QUOTA_REFRESH_MS: '200',
          });
          receiver = await startReceiver();
          browser = await chromium.launch({
            executablePath: CHROMIUM,
            args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
          });
          admin = await browser.newContext({ viewport: { width: 1280, height: 800 } });
          await admin.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: s.url });
          page = await newPage(admin);
        });
        afterAll(async () => {
          await browser?.close();
          await receiver?.close();
          await s?.stop();
        });

        it('the sign-in page comes first, and the first admin joins with the one-time link', async () => {
          await page.goto(`${s.url}/`);
          await page.waitForURL(/\/admin\/sign-in/);
          await page.getByRole('heading', { level: 1 }).waitFor();
          await checkPage(page, 'sign-in');
          await shoot(page, 'sign-in');
          const invitation = await createInvitation(
            s.running.db.orm.em.fork(),
            { orgId: s.orgA.orgId, role: 'admin', ttlMs: 24 * 3600_000 },
            { actor: 'first start' },
          );
          await page.goto(`${s.url}${INVITATION_PATH}${invitation.token}`);
          await checkPage(page, 'invitation');
          await shoot(page, 'invitation');
          await join(page, `${s.url}${INVITATION_PATH}${invitation.token}`, 'first.admin@example.com');
          await page.getByText('first.admin@example.com').first().waitFor();
        });

        it('creates a key, shows it once, the key works, and after a reload it is nowhere on the page', async () => {
          await page.getByRole('button', { name: 'Create API Key' }).click();
          const dialog = page.getByRole('dialog');
          await dialog.getByLabel('Name').fill('Website backend');
          await dialog.getByRole('button', { name: 'Create', exact: true }).click();
          const field = dialog.getByLabel('API key');
          await field.waitFor();
          const key = await field.inputValue();
          expect(key).toMatch(/^ck_[A-Za-z0-9_-]{32}$/);
          await dialog.getByText('This key will not be shown again').waitFor();
          await checkPage(page, 'key created');
          await shoot(page, 'key-created');
          await dialog.getByRole('button', { name: 'Copy' }).click();
          // Page code is passed as text: this package is type-checked for Node, without the DOM's types.
          await expect(page.evaluate('navigator.clipboard.readText()')).resolves.toBe(key);

          expect((await s.api('/deals', { key })).status).toBe(200);
          await dialog.getByRole('button', { name: 'Done' }).click();
          await page.getByLabel('API key', { exact: true }).waitFor({ state: 'detached' });
          expect(await page.content()).not.toContain(key);
          await page.reload();
          await page.getByRole('table', { name: 'API keys' }).waitFor();
          expect(await page.content()).not.toContain(key);
          await checkPage(page, 'keys');
          await shoot(page, 'keys');

          // Revoke asks first; then the key answers 401.
          await page
            .getByRole('row', { name: /Website backend/ })
            .getByRole('button', { name: 'Revoke' })
            .click();
          await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
          await eventually('the key revoked', async () =>
            (await s.api('/deals', { key })).status === 401 ? true : undefined,
          );
          await page
            .getByRole('row', { name: /Website backend/ })
            .getByText('Revoked')
            .waitFor();
          // The Revoke button is gone with the key's state: focus is on the outcome, not lost to the page.
          expect(await page.evaluate('document.activeElement?.textContent')).toMatch(
            /^Revoked .*Website backend/,
          );
        });

        /** The key made with only deals:read and an expiry, for the rotation test after it. */
        let scoped: { key: string; expiresAt: string } | undefined;

        /** The row of the key whose plaintext is `key` (a successor's prefix also shows in its predecessor's row). */
        const rowOf = (p: Page, key: string) =>
          p
            .getByRole('row')
            .filter({ has: p.getByRole('cell', { name: `${key.slice(0, 7)}…`, exact: true }) });

        it('creates a key with only deals:read and an expiry: shown once with both, it reads deals but may not write them', async () => {
          // A browser half an hour off the hour (UTC+05:30 all year): the expiry it types in local time must
          // reach the server as that instant.
          const context = await browser.newContext({
            viewport: { width: 1280, height: 900 },
            timezoneId: 'Asia/Kolkata',
            locale: 'en-US',
          });
          await context.addCookies(await admin.cookies());
          const p = await newPage(context);
          await p.goto(`${s.url}/admin/keys`);
          await p.getByRole('button', { name: 'Create API Key' }).click();
          const dialog = p.getByRole('dialog');
          await dialog.getByLabel('Name').fill('Reporting');
          await dialog.getByLabel('Only these scopes').check();
          await dialog.getByRole('button', { name: 'Create', exact: true }).click();
          await dialog.getByRole('alert').filter({ hasText: 'Choose at least one scope' }).waitFor();

          await dialog.getByRole('group', { name: 'Deals' }).getByLabel('deals:read').check();
          const expiresAt = new Date(Math.ceil(Date.now() / 60_000) * 60_000 + 3 * 86_400_000);
          const kolkata = new Date(expiresAt.getTime() + 5.5 * 3_600_000).toISOString().slice(0, 16);
          await dialog.getByLabel('Expires').fill(kolkata);
          await checkPage(p, 'create key with scopes');
          await shoot(p, 'key-create-scopes');
          await dialog.getByRole('button', { name: 'Create', exact: true }).click();

          const field = dialog.getByLabel('API key');
          await field.waitFor();
          const key = await field.inputValue();
          expect(key).toMatch(/^ck_[A-Za-z0-9_-]{32}$/);
          await dialog.getByText('This key will not be shown again').waitFor();
          expect(await dialog.locator('dl').textContent()).toContain('deals:read');
          expect(await dialog.locator('dl').textContent()).not.toContain('Full access');
          expect(await dialog.locator('dl time').getAttribute('datetime')).toBe(expiresAt.toISOString());
          await checkPage(p, 'scoped key created');
          await shoot(p, 'key-created-scoped');

          expect((await s.api('/deals', { key })).status).toBe(200);
          const write = await s.api('/deals', { key, method: 'POST', json: { title: 'Not allowed' } });
          expect(write.status).toBe(403);
          expect(write.body.code).toBe('insufficient_scope');

          await dialog.getByRole('button', { name: 'Done' }).click();
          await p.getByLabel('API key', { exact: true }).waitFor({ state: 'detached' });
          expect(await p.content()).not.toContain(key);
          const row = rowOf(p, key);
          await row.getByText('deals:read', { exact: true }).waitFor();
          expect(await row.getByText('Full access').count()).toBe(0);
          expect(await row.locator('time').first().getAttribute('datetime')).toBe(expiresAt.toISOString());
          // The key made with the organization has full access and no expiry.
          const original = rowOf(p, s.orgA.apiKey);
          await original.getByText('Full access').waitFor();
          await original.getByRole('cell', { name: 'Never' }).first().waitFor();
          await checkPage(p, 'keys with scopes');
          await shoot(p, 'keys-scopes');
          await context.close();
          scoped = { key, expiresAt: expiresAt.toISOString() };
        });

        it('rotates a key: the successor is shown once and works; with no overlap the old key expires at once, with 24 hours both work', async () => {
          if (!scoped) throw new Error('needs the key of the test before');
          await page.goto(`${s.url}/admin/keys`);
          await page.getByRole('table', { name: 'API keys' }).waitFor();
          // A revoked key cannot be rotated.
          expect(
            await page
              .getByRole('row', { name: /Website backend/ })
              .getByRole('button', { name: 'Rotate' })
              .count(),
          ).toBe(0);

          await rowOf(page, scoped.key).getByRole('button', { name: 'Rotate' }).click();
          const dialog = page.getByRole('dialog');
          await expect(dialog.getByLabel('24 hours').isChecked()).resolves.toBe(true);
          await dialog.getByLabel('No overlap: stop it now').check();
          await checkPage(page, 'rotate key');
          await shoot(page, 'key-rotate');
          await dialog.getByRole('button', { name: 'Rotate', exact: true }).click();
          const field = dialog.getByLabel('API key');
          await field.waitFor();
          const successor = await field.inputValue();
          expect(successor).toMatch(/^ck_[A-Za-z0-9_-]{32}$/);
          expect(successor).not.toBe(scoped.key);
          await dialog.getByText('This key will not be shown again').waitFor();
          await dialog.getByText('has stopped working').waitFor();
          // The successor has the same access and expiry.
          expect(await dialog.locator('dl').textContent()).toContain('deals:read');
          expect(await dialog.locator('dl time').getAttribute('datetime')).toBe(scoped.expiresAt);
          await checkPage(page, 'key rotated');
          await shoot(page, 'key-rotated');

          expect((await s.api('/deals', { key: successor })).status).toBe(200);
          const write = await s.api('/deals', {
            key: successor,
            method: 'POST',
            json: { title: 'Not allowed' },
          });
          expect(write.body.code).toBe('insufficient_scope');
          const old = await s.api('/deals', { key: scoped.key });
          expect(old.status).toBe(401);
          expect(old.body.code).toBe('expired_api_key');

          await dialog.getByRole('button', { name: 'Done' }).click();
          await page.getByLabel('API key', { exact: true }).waitFor({ state: 'detached' });
          expect(await page.content()).not.toContain(successor);
          const oldRow = rowOf(page, scoped.key);
          await oldRow.getByText('Expired').first().waitFor();
          await oldRow.getByText(`${successor.slice(0, 7)}…`).waitFor();
          expect(await oldRow.getByRole('button', { name: 'Rotate' }).count()).toBe(0);

          // The default overlap: the old key keeps working for 24 hours next to its successor.
          await rowOf(page, successor).getByRole('button', { name: 'Rotate' }).click();
          await dialog.getByRole('button', { name: 'Rotate', exact: true }).click();
          await dialog.getByLabel('API key').waitFor();
          const third = await dialog.getByLabel('API key').inputValue();
          const until = await dialog
            .getByText('keeps working until')
            .locator('time')
            .getAttribute('datetime');
          const overlap = Date.parse(until ?? '') - Date.now();
          expect(overlap).toBeGreaterThan(23 * 3_600_000);
          expect(overlap).toBeLessThanOrEqual(24 * 3_600_000);
          expect((await s.api('/deals', { key: third })).status).toBe(200);
          expect((await s.api('/deals', { key: successor })).status).toBe(200);
          await dialog.getByRole('button', { name: 'Done' }).click();
          await page.getByLabel('API key', { exact: true }).waitFor({ state: 'detached' });
          const rotatedRow = rowOf(page, successor);
          await rotatedRow.getByText('Rotated').waitFor();
          await rotatedRow.getByText('Works until').waitFor();
          expect(await rotatedRow.getByText('Works until').locator('time').getAttribute('datetime')).toBe(
            until,
          );
          expect(await rotatedRow.getByRole('button', { name: 'Rotate' }).count()).toBe(0);
          await rotatedRow.getByRole('button', { name: 'Revoke' }).waitFor();
          await checkPage(page, 'keys rotated');
          await shoot(page, 'keys-rotated');

          // Its successor revoked (leaked, say), the rotated key may be rotated again.
          await rowOf(page, third).getByRole('button', { name: 'Revoke' }).click();
          await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
          await rotatedRow.getByText(/since revoked: rotate it again/).waitFor();
          await rotatedRow.getByRole('button', { name: 'Rotate' }).click();
          await dialog.getByRole('button', { name: 'Rotate', exact: true }).click();
          await dialog.getByLabel('API key').waitFor();
          const fourth = await dialog.getByLabel('API key').inputValue();
          expect((await s.api('/deals', { key: fourth })).status).toBe(200);
          expect((await s.api('/deals', { key: third })).status).toBe(401);
          await dialog.getByRole('button', { name: 'Done' }).click();
          await page.getByLabel('API key', { exact: true }).waitFor({ state: 'detached' });
        });

        it('usage shows the same numbers as GET /usage; a lowered quota brings the 80% and then the used-up banner, a raised one takes it away', async () => {
          for (let i = 0; i < 3; i++) await s.api('/deals');
          const rest = (await s.api('/usage')).body.data;
          await page.goto(`${s.url}/admin/usage`);
          const format = (n: number) => new Intl.NumberFormat('en-US').format(n);
          await page
            .getByText(
              `${format(rest.quotas.api_calls.used)} of ${format(rest.quotas.api_calls.limit)} API calls`,
            )
            .waitFor();
          await page.getByRole('img', { name: /calls per day/i }).waitFor();
          await checkPage(page, 'usage');
          await shoot(page, 'usage');

          // The calls so far (GET /usage counted itself) against a quota they are 80-95% of.
          const used = rest.quotas.api_calls.used as number;
          await setOrgQuota(s.running.db.orm.em.fork(), s.orgA.orgId, {
            api_calls: Math.floor((used * 100) / 82),
          });
          await eventually(
            'the 80% banner',
            () => bannerShows(page, `${s.url}/admin/usage`, /reached 80%/),
            20_000,
          );
          await shoot(page, 'usage-banner-80');
          await setOrgQuota(s.running.db.orm.em.fork(), s.orgA.orgId, { api_calls: used });
          await eventually(
            'the used-up banner',
            () => bannerShows(page, `${s.url}/admin/keys`, /quota is used up .*; they are refused until /),
            20_000,
          );
          await shoot(page, 'keys-banner-used-up');
          // Raised again: the banner goes (it follows the quota now, not the month's recorded alerts).
          await setOrgQuota(s.running.db.orm.em.fork(), s.orgA.orgId, { api_calls: null });
          await eventually(
            'no banner',
            async () => {
              await page.goto(`${s.url}/admin/usage`);
              await page.getByRole('img', { name: /calls per day/i }).waitFor();
              return (await page.locator('.banner').count()) === 0 ? true : undefined;
            },
            20_000,
          );
        });

        it('a webhook to a local receiver gets the test event, its attempt shows in the log, and Replay sends it again', async () => {
          const hookPath = `/e2e-${driver}`;
          await page.goto(`${s.url}/admin/webhooks`);
          await page.getByRole('button', { name: 'Create webhook' }).click();
          const dialog = page.getByRole('dialog');
          await dialog.getByLabel('Endpoint URL').fill(receiver.url(hookPath));
          await dialog.getByLabel('deal.created').check();
          await dialog.getByRole('button', { name: 'Create', exact: true }).click();
          const secret = await dialog.getByLabel('Signing secret').inputValue();
          expect(secret).toMatch(/^whsec_/);
          receiver.secretFor(hookPath, secret);
          await shoot(page, 'webhook-created');
          await dialog.getByRole('button', { name: 'Done' }).click();
          await page.getByLabel('Signing secret', { exact: true }).waitFor({ state: 'detached' });
          expect(await page.content()).not.toContain(secret);

          await page.getByRole('button', { name: 'Send test event' }).first().click();
          const [got] = await receiver.waitFor(hookPath, (r) => r.length >= 1);
          expect(got?.verifyError).toBeUndefined();
          new Webhook(secret).verify(got?.body ?? '', got?.headers ?? {});
          await checkPage(page, 'webhooks');
          await shoot(page, 'webhooks');

          await page.getByRole('link', { name: 'Deliveries' }).first().click();
          await page
            .getByRole('table', { name: 'Deliveries' })
            .getByText('200')
            .first()
            .waitFor({ timeout: 15_000 });
          // Attempts come seconds apart: their times show the seconds.
          expect(await page.getByRole('table', { name: 'Deliveries' }).textContent()).toMatch(
            /\d{1,2}:\d{2}:\d{2}/,
          );
          await checkPage(page, 'deliveries');
          await shoot(page, 'deliveries');
          await page.getByRole('button', { name: 'Replay' }).first().click();
          const again = await receiver.waitFor(hookPath, (r) => r.length >= 2);
          expect(again[1]?.headers['webhook-id']).toBe(got?.headers['webhook-id']);
        });

        it('fields: creates a select field with options, shows the server’s errors by their inputs, plans and applies a pasted schema file, archives a field', async () => {
          await page.goto(`${s.url}/admin/fields`);
          await page.getByRole('heading', { name: 'Fields', level: 1 }).waitFor();
          // The objects are the server's list: a section for each, empty so far.
          await page.getByRole('heading', { name: 'Deals', level: 2 }).waitFor();
          await page.getByRole('heading', { name: 'Contacts', level: 2 }).waitFor();
          await page.getByText('No fields on deals yet').waitFor();

          await page.getByRole('button', { name: 'Create field' }).click();
          const dialog = page.getByRole('dialog', { name: 'Create field' });
          await dialog.getByLabel('Type', { exact: true }).selectOption('select');
          await dialog.getByLabel('Key', { exact: true }).fill('Region');
          await dialog.getByLabel('Label (optional)').fill('Region');
          await dialog.getByLabel('Option 1 value').fill('emea');
          await dialog.getByLabel('Option 1 label').fill('EMEA');
          // An empty row is not sent; a value listed twice is named by the row it was typed in.
          await dialog.getByRole('button', { name: 'Add option' }).click();
          await dialog.getByRole('button', { name: 'Add option' }).click();
          await dialog.getByLabel('Option 3 value').fill('emea');
          // A select can be indexed (a checkbox of the types that can).
          await dialog.getByLabel('Indexed').check();
          await dialog.getByRole('button', { name: 'Create field' }).click();
          // The server's rule, by the input it is about, said with the input's label.
          const keyError = dialog.locator('#field-key-error');
          await keyError.waitFor();
          expect(await keyError.textContent()).toMatch(/^Key: must be snake_case/);
          expect(await dialog.getByLabel('Key', { exact: true }).getAttribute('aria-invalid')).toBe('true');
          await checkPage(page, 'create field with an error');
          await shoot(page, 'field-create-error');
          await dialog.getByLabel('Key', { exact: true }).fill('region');
          await dialog.getByRole('button', { name: 'Create field' }).click();
          await dialog
            .locator('#field-option-2-value-error')
            .getByText('Option 3 value: "emea" is listed twice')
            .waitFor();
          await dialog.getByLabel('Option 3 value').fill('apac');
          await dialog.getByRole('button', { name: 'Create field' }).click();
          await dialog.waitFor({ state: 'detached' });
          await page.getByText('Created the field Region (region) on deals.').waitFor();
          const deals = page.getByRole('table', { name: 'Fields of deals' });
          const region = deals.getByRole('row', { name: /Region/ });
          await region.getByText('emea', { exact: true }).waitFor();
          await region.getByText('apac', { exact: true }).waitFor();
          await region.getByText('Active').waitFor();
          await region.getByText('Indexed', { exact: true }).waitFor();
          expect((await s.api('/custom-fields/deals/region')).body.data.indexed).toBe(true);
          // Its index dropped, then made again, each asked first: the row and the API say the same.
          await region.getByRole('button', { name: 'Drop index of region' }).click();
          const unindex = page.getByRole('dialog', { name: 'Drop index' });
          await unindex.getByText('Filters on it keep working').waitFor();
          await unindex.getByRole('button', { name: 'Drop index', exact: true }).click();
          await page.getByText('Dropped the index of region on deals.').waitFor();
          await region.getByText('Indexed', { exact: true }).waitFor({ state: 'detached' });
          expect((await s.api('/custom-fields/deals/region')).body.data.indexed).toBe(false);
          await region.getByRole('button', { name: 'Index region' }).click();
          await page
            .getByRole('dialog', { name: 'Index field' })
            .getByRole('button', { name: 'Index', exact: true })
            .click();
          await page.getByText('Indexed the field region on deals.').waitFor();
          await region.getByText('Indexed', { exact: true }).waitFor();
          expect((await s.api('/custom-fields/deals/region')).body.data.indexed).toBe(true);

          // A duplicate key and a pattern RE2 cannot run: each by its input.
          await page.getByRole('button', { name: 'Create field' }).click();
          await dialog.getByLabel('Key', { exact: true }).fill('region');
          await dialog.getByRole('button', { name: 'Create field' }).click();
          await dialog.getByText('Key: deals already has a custom field region').waitFor();
          await dialog.getByLabel('Key', { exact: true }).fill('code');
          await dialog.getByLabel('Pattern (optional)').fill('(?=[A-Z])');
          await dialog.getByRole('button', { name: 'Create field' }).click();
          await dialog
            .locator('#field-pattern-error')
            .getByText(/^Pattern: not a regular expression RE2 can run/)
            .waitFor();
          await dialog.getByLabel('Pattern (optional)').fill('^[A-Z]{3}$');
          // Not indexed unless asked; a type no index serves offers no checkbox.
          await dialog.getByLabel('Type', { exact: true }).selectOption('json');
          expect(await dialog.getByLabel('Indexed').count()).toBe(0);
          await dialog.getByLabel('Type', { exact: true }).selectOption('text');
          expect(await dialog.getByLabel('Indexed').isChecked()).toBe(false);
          await dialog.getByRole('button', { name: 'Create field' }).click();
          await dialog.waitFor({ state: 'detached' });
          await deals.getByRole('row', { name: /code/ }).getByText('^[A-Z]{3}$').waitFor();

          // A file that is not JSON, then one whose plan has a problem: Apply waits.
          const schema = page.getByRole('region', { name: 'Schema file' });
          const fileText = schema.getByLabel('Schema file (JSON)');
          await fileText.fill('{"version": 1,');
          await schema.getByRole('button', { name: 'Show plan' }).click();
          await schema
            .getByRole('alert')
            .getByText(/^not JSON: /)
            .waitFor();
          // A type change is a convert: its dry run names a value that would not convert.
          const emea = await s.api('/deals', {
            method: 'POST',
            json: { title: 'In EMEA', custom: { region: 'emea' } },
          });
          expect(emea.status, emea.text).toBe(201);
          await fileText.fill(
            JSON.stringify({ version: 1, objects: { deals: [{ key: 'region', type: 'number' }] } }),
          );
          await schema.getByRole('button', { name: 'Show plan' }).click();
          await schema.getByText(/Cannot apply: 1 values do not convert to number \(first: /).waitFor();
          await schema.getByText('0 of 1 values convert (0 change); 1 do not.').waitFor();
          expect(await schema.getByRole('button', { name: 'Apply' }).isDisabled()).toBe(true);
          await s.api(`/deals/${emea.body.data.id}`, { method: 'DELETE' });

          // The current fields as the CLI exports them, edited: one field added to each object, code left out.
          await fileText.fill('');
          await schema.getByRole('button', { name: 'Start from the current fields' }).click();
          await eventually('the export in the text area', async () =>
            (await fileText.inputValue()) === '' ? undefined : true,
          );
          const file = JSON.parse(await fileText.inputValue());
          expect(file.objects.deals.map((f: { key: string }) => f.key)).toEqual(['region', 'code']);
          file.objects.deals = [
            file.objects.deals[0],
            {
              key: 'arr',
              label: 'ARR',
              type: 'currency',
              indexed: true,
              validation: { min: 0 },
              ai_hint: 'metrics',
            },
          ];
          file.objects.contacts = [{ key: 'tier', type: 'select', options: [{ value: 'gold' }] }];
          await fileText.fill(JSON.stringify(file, null, 2));
          await schema.getByRole('button', { name: 'Show plan' }).click();
          const plan = schema.getByRole('table', { name: 'Plan of the schema file' });
          await plan.waitFor();
          const stepOf = async (key: string) =>
            (await plan.getByRole('row', { name: new RegExp(`^${key}\\b`) }).textContent()) ?? '';
          expect(await stepOf('arr')).toMatch(/DealsAdd/);
          expect(await stepOf('arr')).toMatch(/A new fieldIndexed\.$/);
          expect(await stepOf('code')).toMatch(/DealsArchiveNo record holds a value/);
          expect(await stepOf('tier')).toMatch(/ContactsAdd/);
          expect(await plan.getByRole('row').count()).toBe(4);
          await checkPage(page, 'fields with a plan');
          await shoot(page, 'fields-plan');
          await schema.getByRole('button', { name: 'Apply' }).click();
          await page
            .getByRole('dialog', { name: 'Apply schema file' })
            .getByRole('button', { name: 'Apply' })
            .click();
          await page.getByText('Applied the schema file: 3 steps.').waitFor();
          await deals.getByRole('row', { name: /ARR/ }).getByText('at least 0').waitFor();
          await deals.getByRole('row', { name: /ARR/ }).getByText('Indexed', { exact: true }).waitFor();
          await deals.getByRole('row', { name: /code/ }).getByText('Archived').waitFor();
          await page
            .getByRole('table', { name: 'Fields of contacts' })
            .getByRole('row', { name: /tier/ })
            .getByText('gold')
            .waitFor();
          expect(
            (await s.api('/custom-fields/contacts')).body.data.map((f: { key: string }) => f.key),
          ).toEqual(['tier']);

          // Archive asks first.
          await deals.getByRole('row', { name: /ARR/ }).getByRole('button', { name: 'Archive' }).click();
          const confirm = page.getByRole('dialog', { name: 'Archive field' });
          await confirm.getByText('its key is never used again').waitFor();
          await confirm.getByRole('button', { name: 'Archive' }).click();
          await page.getByText('Archived the field arr of deals.').waitFor();
          await deals.getByRole('row', { name: /ARR/ }).getByText('Archived').waitFor();
          expect(await deals.getByRole('row', { name: /ARR/ }).getByRole('button').count()).toBe(0);
          // An archived field's index is dropped: no longer shown as indexed.
          expect(
            await deals.getByRole('row', { name: /ARR/ }).getByText('Indexed', { exact: true }).count(),
          ).toBe(0);
          const stored = await s.sql<{ key: string; archived: boolean }>(
            'select key, archived_at is not null as archived from custom_fields where org_id = ? and object = ? order by position',
            [s.orgA.orgId, 'deals'],
          );
          expect(stored).toEqual([
            { key: 'region', archived: false },
            { key: 'code', archived: true },
            { key: 'arr', archived: true },
          ]);
          await page.getByRole('button', { name: 'Dismiss' }).click();
          await checkPage(page, 'fields');
          await shoot(page, 'fields');
          await page.goto(`${s.url}/admin/audit`);
          const audit = page.getByRole('table', { name: 'Audit log' });
          await audit.getByText('custom_fields.applied').waitFor();
          expect(await audit.getByText('custom_field.changed').count()).toBe(2);
          expect(await audit.textContent()).toContain('index dropped');
          expect(await audit.textContent()).toContain(
            'added deals.arr; archived deals.code; added contacts.tier',
          );
        });

        it('fields: a member reads them and the plan of a file, with nothing to change, and the server refuses them too', async () => {
          const person = await addPerson(s, s.orgA.orgId, 'member');
          const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
          const member = await newPage(context);
          await member.goto(`${s.url}/admin/sign-in?next=%2Ffields`);
          await member.getByLabel('Email').fill(person.email);
          await member.getByLabel('Password').fill(person.password);
          await member.getByRole('button', { name: 'Sign in' }).click();
          await member.waitForURL(/\/admin\/fields$/);
          const deals = member.getByRole('table', { name: 'Fields of deals' });
          await deals.getByRole('row', { name: /Region/ }).waitFor();
          expect(await member.getByRole('button', { name: 'Create field' }).count()).toBe(0);
          expect(await deals.getByRole('button').count()).toBe(0);
          const schema = member.getByRole('region', { name: 'Schema file' });
          await schema.getByText('Only an admin can apply it.').waitFor();
          await schema
            .getByLabel('Schema file (JSON)')
            .fill(JSON.stringify({ version: 1, objects: { contacts: [] } }));
          await schema.getByRole('button', { name: 'Show plan' }).click();
          await schema
            .getByRole('table', { name: 'Plan of the schema file' })
            .getByText('Archive', { exact: true })
            .waitFor();
          expect(await schema.getByRole('button', { name: 'Apply' }).count()).toBe(0);
          await checkPage(member, 'fields as a member');
          await shoot(member, 'fields-as-member');
          const refused = await member.evaluate(async () => {
            const call = (path: string, body: unknown) =>
              fetch(`/admin/trpc/fields.${path}`, {
                method: 'POST',
                headers: { 'content-type': 'application/json' },
                body: JSON.stringify(body),
              }).then((res) => res.status);
            return [
              await call('create', { object: 'deals', key: 'sneaky', type: 'text' }),
              await call('archive', { object: 'deals', key: 'region' }),
              await call('setIndexed', { object: 'deals', key: 'region', indexed: false }),
              await call('schemaApply', { text: '{"version": 1, "objects": {"contacts": []}}' }),
            ];
          });
          expect(refused).toEqual([403, 403, 403, 403]);
          expect(
            (await s.api('/custom-fields/contacts')).body.data.map((f: { key: string }) => f.key),
          ).toEqual(['tier']);
          expect((await s.api('/custom-fields/deals/region')).body.data.indexed).toBe(true);
          await context.close();
        });

        it('team and audit log: an invited member sees keys but no Create button, and the server refuses them too', async () => {
          await page.goto(`${s.url}/admin/team`);
          await page.getByRole('button', { name: 'Invite' }).click();
          const dialog = page.getByRole('dialog');
          await dialog.getByLabel('Role').selectOption('member');
          await dialog.getByRole('button', { name: 'Create invitation' }).click();
          const link = await dialog.getByLabel('Invitation link').inputValue();
          await dialog.getByRole('button', { name: 'Done' }).click();

          const memberContext = await browser.newContext();
          const memberPage = await newPage(memberContext);
          await join(memberPage, link, 'member.person@example.com');
          await memberPage.getByRole('table', { name: 'API keys' }).waitFor();
          expect(await memberPage.getByRole('button', { name: 'Create API Key' }).count()).toBe(0);
          expect(await memberPage.getByRole('button', { name: 'Revoke' }).count()).toBe(0);
          expect(await memberPage.getByRole('button', { name: 'Rotate' }).count()).toBe(0);
          await shoot(memberPage, 'keys-as-member');
          const status = await memberPage.evaluate(async () => {
            const res = await fetch('/admin/trpc/keys.create', {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ name: 'sneaky' }),
            });
            return res.status;
          });
          expect(status).toBe(403);
          const rotateStatus = await memberPage.evaluate(async (keyId) => {
            const res = await fetch('/admin/trpc/keys.rotate', {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ key_id: keyId }),
            });
            return res.status;
          }, s.orgA.keyId);
          expect(rotateStatus).toBe(403);
          expect((await s.api('/deals')).status).toBe(200);
          await memberContext.close();

          await page.reload();
          await page.getByRole('cell', { name: 'member.person@example.com', exact: true }).waitFor();
          // A role is changed only once confirmed: an arrow key on the select asks, it does not promote.
          const roleOf = async () =>
            (
              await s.sql<{ role: string }>('select role from users where email = ?', [
                'member.person@example.com',
              ])
            )[0]?.role;
          const roleSelect = page.getByLabel('Role of member.person@example.com');
          await roleSelect.focus();
          await page.keyboard.press('ArrowUp');
          const roleDialog = page.getByRole('dialog', { name: 'Change role' });
          await roleDialog.waitFor();
          expect(await roleOf()).toBe('member');
          await roleDialog.getByRole('button', { name: 'Cancel' }).click();
          // The dialog's close event, a moment after the click, puts the select back.
          await eventually('the select back on member', async () =>
            (await roleSelect.inputValue()) === 'member' ? true : undefined,
          );
          expect(await roleOf()).toBe('member');
          await roleSelect.selectOption('admin');
          await roleDialog.getByRole('button', { name: 'Make admin' }).click();
          await page.getByText('member.person@example.com is now admin.').waitFor();
          expect(await roleOf()).toBe('admin');
          await roleSelect.selectOption('member');
          await roleDialog.getByRole('button', { name: 'Make member' }).click();
          await page.getByText('member.person@example.com is now member.').waitFor();
          expect(await roleOf()).toBe('member');
          await checkPage(page, 'team');
          await shoot(page, 'team');
          await page.goto(`${s.url}/admin/audit`);
          const auditTable = page.getByRole('table', { name: 'Audit log' });
          await auditTable.getByText('member.joined').first().waitFor();
          // The invitation's expiry reads like every other time on the page, not as ISO 8601.
          const auditText = await auditTable.textContent();
          expect(auditText).toMatch(/valid until [A-Z][a-z]{2} \d{1,2}, \d{4}, \d{1,2}:\d{2}/);
          expect(auditText).not.toMatch(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/);
          await checkPage(page, 'audit');
          await shoot(page, 'audit');
          await page.goto(`${s.url}/admin/account`);
          await checkPage(page, 'account');
          await shoot(page, 'account');
        });

        it("an admin of another organization sees nothing of the first's keys, webhooks or people", async () => {
          const person = await addPerson(s, s.orgB.orgId, 'admin');
          const context = await browser.newContext();
          const other = await newPage(context);
          await other.goto(`${s.url}/admin/sign-in`);
          await other.getByLabel('Email').fill(person.email);
          await other.getByLabel('Password').fill(person.password);
          await other.getByRole('button', { name: 'Sign in' }).click();
          await other.waitForURL(/\/admin\/keys$/);
          await other.getByRole('table', { name: 'API keys' }).waitFor();
          expect(await other.content()).not.toContain('Website backend');
          await other.goto(`${s.url}/admin/webhooks`);
          await other.getByRole('heading', { level: 1 }).waitFor();
          expect(await other.content()).not.toContain(receiver.url(''));
          await other.goto(`${s.url}/admin/team`);
          await other.getByRole('table', { name: 'Members' }).waitFor();
          expect(await other.content()).not.toContain('first.admin@example.com');
          await context.close();
        });

        it('works in a narrow window, and no page broke the Content-Security-Policy', async () => {
          const context = await browser.newContext({ viewport: { width: 375, height: 740 } });
          await context.addCookies(await admin.cookies());
          const narrow = await newPage(context);
          await narrow.goto(`${s.url}/admin/keys`);
          await narrow.getByRole('table', { name: 'API keys' }).waitFor();
          // Neither the page nor the table scrolls sideways: each key is a card, its actions on screen.
          const sideways = async () =>
            (await narrow.evaluate(`Math.max(
              document.documentElement.scrollWidth - window.innerWidth,
              ...[...document.querySelectorAll('.table-wrap')].map((w) => w.scrollWidth - w.clientWidth),
            )`)) as number;
          expect(await sideways()).toBeLessThanOrEqual(0);
          const revoke = await narrow.getByRole('button', { name: 'Revoke' }).first().boundingBox();
          expect(revoke && revoke.x + revoke.width).toBeLessThanOrEqual(375);
          await checkPage(narrow, 'keys (narrow)');
          await shoot(narrow, 'keys-narrow');
          const [hook] = await s.sql<{ id: string }>('select id from webhook_endpoints where org_id = ?', [
            s.orgA.orgId,
          ]);
          for (const [page, table, name] of [
            ['audit', 'Audit log', 'audit'],
            ['webhooks', 'Webhook endpoints', 'webhooks'],
            ['team', 'Members', 'team'],
            ['fields', 'Fields of deals', 'fields'],
            [`webhooks/${hook?.id}`, 'Deliveries', 'deliveries'],
          ] as const) {
            await narrow.goto(`${s.url}/admin/${page}`);
            await narrow.getByRole('table', { name: table }).getByRole('row').nth(1).waitFor();
            expect(await sideways(), page).toBeLessThanOrEqual(0);
            await shoot(narrow, `${name}-narrow`);
          }
          // The create-field form in one column, with a select's options: nothing wider than the dialog.
          await narrow.goto(`${s.url}/admin/fields`);
          await narrow.getByRole('button', { name: 'Create field' }).click();
          const create = narrow.getByRole('dialog', { name: 'Create field' });
          await create.getByLabel('Type', { exact: true }).selectOption('select');
          await create.getByLabel('Option 1 value').waitFor();
          expect(
            await narrow.evaluate(`(() => {
              const dialog = document.querySelector('dialog[open]');
              return dialog.scrollWidth - dialog.clientWidth;
            })()`),
          ).toBeLessThanOrEqual(0);
          await shoot(narrow, 'field-create-narrow');
          await create.getByRole('button', { name: 'Cancel' }).click();
          await context.close();
          expect(cspViolations).toEqual([]);
        });
      });
    },
  );
}
