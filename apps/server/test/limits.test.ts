import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { OWN_QUOTAS_REFRESH_MS, setOrgQuota } from '@crm/api';
import { CrmError } from '@crm/client';
import { loadConfig } from '@crm/config';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/logger.ts';
import { type RunningServer, startServer } from '../src/server.ts';
import {
  type ApiResponse,
  CONTRACT_RATE_LIMITS,
  describeOnEachDatabase,
  ISO,
  MISSING_ID,
  nextMonthStart,
  startTestServer,
  type TestServer,
} from './harness.ts';

const RATE_LIMIT_HEADERS = ['ratelimit-policy', 'ratelimit'];
const API_QUOTA_HEADERS = [
  'x-api-quota-limit',
  'x-api-quota-used',
  'x-api-quota-remaining',
  'x-api-quota-reset',
];
const AI_QUOTA_HEADERS = ['x-ai-quota-limit', 'x-ai-quota-used', 'x-ai-quota-remaining', 'x-ai-quota-reset'];

/** `"crud";r=57;t=13` → { name: 'crud', r: 57, t: 13 } */
function parseItem(value: string | null): Record<string, string | number> {
  const [name = '', ...params] = (value ?? '').split(';');
  const item: Record<string, string | number> = { name: name.replace(/^"|"$/g, '') };
  for (const p of params) {
    const [k = '', v = ''] = p.split('=');
    item[k] = Number(v);
  }
  return item;
}

const used = (res: ApiResponse) => Number(res.headers.get('x-api-quota-used'));

function expectQuotaHeaders(res: ApiResponse, limit: number) {
  expect(res.headers.get('x-api-quota-limit'), res.text).toBe(String(limit));
  const u = used(res);
  expect(u).toBeGreaterThan(0);
  expect(res.headers.get('x-api-quota-remaining')).toBe(String(Math.max(0, limit - u)));
  expect(res.headers.get('x-api-quota-reset')).toBe(nextMonthStart());
  for (const name of AI_QUOTA_HEADERS) expect(res.headers.get(name)).toBeNull();
}

function expectGroupHeaders(res: ApiResponse, group: string, limit: number, window = 60) {
  expect(parseItem(res.headers.get('ratelimit-policy')), res.text).toEqual({
    name: group,
    q: limit,
    w: window,
  });
  const state = parseItem(res.headers.get('ratelimit'));
  expect(state.name).toBe(group);
  expect(state.r).toBeGreaterThanOrEqual(0);
  expect(state.r).toBeLessThan(limit);
  expect(state.t).toBeGreaterThanOrEqual(0);
  expect(state.t).toBeLessThanOrEqual(window);
}

/** The contract's 429 body, exactly these members. */
function expectTooMany(res: ApiResponse, code: string) {
  expect(res.status, res.text).toBe(429);
  expect(Object.keys(res.body).sort()).toEqual(
    ['code', 'error', 'limit', 'remaining', 'reset_at', 'retry_after_seconds', 'used'].sort(),
  );
  expect(res.body.code).toBe(code);
  expect(res.body.remaining).toBe(0);
  expect(res.body.reset_at).toMatch(ISO);
  expect(Number.isInteger(res.body.retry_after_seconds)).toBe(true);
  expect(res.headers.get('retry-after')).toBe(String(res.body.retry_after_seconds));
}

/** Sends `count` requests, `concurrency` at a time, and returns the responses in the order sent. */
async function burst(count: number, send: () => Promise<ApiResponse>, concurrency = 10) {
  const results: ApiResponse[] = [];
  for (let i = 0; i < count; i += concurrency) {
    const batch = Array.from({ length: Math.min(concurrency, count - i) }, send);
    results.push(...(await Promise.all(batch)));
  }
  return results;
}

describeOnEachDatabase(
  (label) => `rate limits and quotas on ${label}`,
  (driver) => {
    let s: TestServer;

    beforeAll(async () => {
      s = await startTestServer(driver, { ...CONTRACT_RATE_LIMITS, CRM_USAGE_FLUSH_INTERVAL_MS: '200' });
    });
    afterAll(async () => {
      await s?.stop();
    });

    describe('headers', () => {
      it('every authenticated REST response carries its group’s RateLimit headers and the API quota headers, errors too', async () => {
        const org = await s.newOrg('Limits org');
        const key = org.apiKey;
        const responses: Array<[ApiResponse, string, number]> = [
          [await s.api('/deals', { key }), 'crud', 200],
          [await s.api('/contacts', { key }), 'crud', 200],
          [await s.api('/search?q=zz', { key }), 'search', 60],
          [await s.api('/pipeline/stages', { key }), 'default', 300],
          [await s.api('/usage', { key }), 'default', 300],
          // Errors: 400 (body, query, malformed JSON, 415), 404.
          [await s.api('/deals', { key, method: 'POST', json: { colour: 'red' } }), 'crud', 200],
          [await s.api('/search?q=z', { key }), 'search', 60],
          [
            await s.api('/deals', {
              key,
              method: 'POST',
              body: '{"title":',
              headers: { 'content-type': 'application/json' },
            }),
            'crud',
            200,
          ],
          [
            await s.api('/deals', {
              key,
              method: 'POST',
              body: 'x',
              headers: { 'content-type': 'text/plain' },
            }),
            'crud',
            200,
          ],
          [await s.api(`/deals/${MISSING_ID}`, { key }), 'default', 300],
          [
            await s.api(`/contacts/${MISSING_ID}`, { key, method: 'PATCH', json: { name: 'x' } }),
            'default',
            300,
          ],
        ];
        expect(responses.map(([r]) => r.status)).toEqual([
          200, 200, 200, 200, 200, 400, 400, 400, 415, 404, 404,
        ]);
        for (const [res, group, limit] of responses) {
          expectGroupHeaders(res, group, limit);
          expectQuotaHeaders(res, 1_000_000);
        }
        // Each counted call is one more than the one before: 400s and 404s count too.
        expect(responses.map(([r]) => used(r))).toEqual(responses.map((_, i) => i + 1));
      });

      it('a missing or invalid key answers 401 without quota headers: nothing is counted', async () => {
        const org = await s.newOrg('Limits org');
        const before = used(await s.api('/deals', { key: org.apiKey }));
        for (const key of [null, 'ck_invalidinvalidinvalidinvalidinvali']) {
          const res = await s.api('/deals', { key });
          expect(res.status).toBe(401);
          for (const name of [...RATE_LIMIT_HEADERS, ...API_QUOTA_HEADERS])
            expect(res.headers.get(name)).toBeNull();
        }
        expect(used(await s.api('/deals', { key: org.apiKey }))).toBe(before + 1);
      });

      it('tRPC calls count against the same quota and carry the same headers, errors included', async () => {
        const org = await s.newOrg('Limits org');
        const first = used(await s.api('/deals', { key: org.apiKey }));
        const call = async (pathAndQuery: string) => {
          const res = await fetch(`${s.url}/trpc/${pathAndQuery}`, {
            headers: { authorization: `Bearer ${org.apiKey}` },
          });
          return {
            status: res.status,
            headers: res.headers,
            body: await res.json(),
            text: '',
          } as ApiResponse;
        };
        const ok = await call(`deals.list?input=${encodeURIComponent('{}')}`);
        expect(ok.status).toBe(200);
        expectGroupHeaders(ok, 'crud', 200);
        expectQuotaHeaders(ok, 1_000_000);
        expect(used(ok)).toBe(first + 1);
        const missing = await call(
          `deals.get?input=${encodeURIComponent(JSON.stringify({ id: MISSING_ID }))}`,
        );
        expect(missing.status).toBe(404);
        expectGroupHeaders(missing, 'default', 300);
        expectQuotaHeaders(missing, 1_000_000);
        expect(used(missing)).toBe(first + 2);
        const stages = await call('pipeline.stages');
        expect(used(stages)).toBe(first + 3);
        expect(used(await s.api('/deals', { key: org.apiKey }))).toBe(first + 4);
      });
    });

    describe('bursts over a group’s limit', () => {
      it('crud: the 201st call in the window answers 429 with the contract body, Retry-After and RateLimit r=0', async () => {
        const org = await s.newOrg('Limits org');
        const results = await burst(200, () => s.api('/deals?limit=1', { key: org.apiKey }));
        expect(results.map((r) => r.status)).toEqual(Array(200).fill(200));
        expect(
          results.map((r) => parseItem(r.headers.get('ratelimit')).r).sort((a, b) => Number(a) - Number(b)),
        ).toEqual(Array.from({ length: 200 }, (_, i) => i));
        const quotaBefore = Math.max(...results.map(used));
        expect(quotaBefore).toBe(200);

        const before = Date.now();
        const rejected = await s.api('/deals', { key: org.apiKey });
        expectTooMany(rejected, 'rate_limited');
        expect(rejected.body).toMatchObject({ limit: 200, used: 200 });
        expect(rejected.body.error).toMatch(/crud/);
        const retry = rejected.body.retry_after_seconds as number;
        expect(retry).toBeGreaterThan(0);
        expect(retry).toBeLessThanOrEqual(60);
        // Retry-After, reset_at and the RateLimit header's t tell the same time.
        const resetIn = Date.parse(rejected.body.reset_at) - before;
        expect(Math.abs(resetIn - retry * 1000)).toBeLessThan(2_000);
        expect(parseItem(rejected.headers.get('ratelimit'))).toEqual({ name: 'crud', r: 0, t: retry });
        expect(parseItem(rejected.headers.get('ratelimit-policy'))).toEqual({ name: 'crud', q: 200, w: 60 });
        // The rejected call consumed no quota.
        expect(used(rejected)).toBe(quotaBefore);

        // A create in the same group is rejected before it stores anything.
        const [{ n: dealsBefore } = { n: -1 }] = await s.sql<{ n: unknown }>(
          'select count(*) as n from deals where org_id = ?',
          [org.orgId],
        );
        const create = await s.api('/deals', {
          key: org.apiKey,
          method: 'POST',
          json: { title: 'Over the limit' },
        });
        expectTooMany(create, 'rate_limited');
        const [{ n: dealsAfter } = { n: -2 }] = await s.sql<{ n: unknown }>(
          'select count(*) as n from deals where org_id = ?',
          [org.orgId],
        );
        expect(Number(dealsAfter)).toBe(Number(dealsBefore));

        // Over tRPC too, with the contract body in the error data.
        const trpcError = await s
          .trpc(org)
          .deals.list.query({})
          .then(
            () => undefined,
            (err: unknown) => err,
          );
        expect(trpcError).toBeInstanceOf(CrmError);
        expect(trpcError).toMatchObject({
          status: 429,
          code: 'rate_limited',
          body: { code: 'rate_limited', limit: 200, remaining: 0 },
        });
        const raw = await fetch(`${s.url}/trpc/deals.list?input=${encodeURIComponent('{}')}`, {
          headers: { authorization: `Bearer ${org.apiKey}` },
        });
        await raw.arrayBuffer();
        expect(raw.status).toBe(429);
        expect(Number(raw.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(parseItem(raw.headers.get('ratelimit'))).toMatchObject({ name: 'crud', r: 0 });
        expect(raw.headers.get('x-api-quota-used')).toBe(String(quotaBefore));

        // Other groups of the same key, and other keys, are not affected.
        const otherGroup = await s.api('/pipeline/stages', { key: org.apiKey });
        expect(otherGroup.status).toBe(200);
        expect(used(otherGroup)).toBe(quotaBefore + 1);
        expect((await s.api('/deals')).status).toBe(200);
      });

      it('search: the 61st search in the window answers 429', async () => {
        const org = await s.newOrg('Limits org');
        const results = await burst(61, () => s.api('/search?q=nothing-here', { key: org.apiKey }));
        expect(results.filter((r) => r.status === 200)).toHaveLength(60);
        const rejected = results.filter((r) => r.status === 429);
        expect(rejected).toHaveLength(1);
        expectTooMany(rejected[0] as ApiResponse, 'rate_limited');
        expect(rejected[0]?.body).toMatchObject({ limit: 60, used: 60 });
        expect(parseItem(rejected[0]?.headers.get('ratelimit') ?? null)).toMatchObject({
          name: 'search',
          r: 0,
        });
        expect((await s.api('/deals', { key: org.apiKey })).status).toBe(200);
      });

      it('default: the 301st call of other operations in the window answers 429', async () => {
        const org = await s.newOrg('Limits org');
        const results = await burst(301, () => s.api('/pipeline/health', { key: org.apiKey }), 20);
        expect(results.filter((r) => r.status === 200)).toHaveLength(300);
        const rejected = results.find((r) => r.status === 429) as ApiResponse;
        expectTooMany(rejected, 'rate_limited');
        expect(rejected.body).toMatchObject({ limit: 300, used: 300 });
        expect(parseItem(rejected.headers.get('ratelimit-policy'))).toEqual({
          name: 'default',
          q: 300,
          w: 60,
        });
        // GET /usage is in the default group too.
        expect((await s.api('/usage', { key: org.apiKey })).status).toBe(429);
        expect((await s.api('/deals', { key: org.apiKey })).status).toBe(200);
      });
    });

    describe('monthly API quota', () => {
      it('the call after the last one of the quota answers 429 api_quota_exceeded until the next month, and changes nothing', async () => {
        const org = await s.newOrg('Limits org', { api_calls: 5 });
        const ok = await burst(5, () => s.api('/deals', { key: org.apiKey }), 1);
        expect(ok.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
        expect(ok.map(used)).toEqual([1, 2, 3, 4, 5]);
        expect(ok.map((r) => r.headers.get('x-api-quota-remaining'))).toEqual(['4', '3', '2', '1', '0']);

        const before = Date.now();
        const over = await s.api('/deals', {
          key: org.apiKey,
          method: 'POST',
          json: { title: 'Over quota' },
        });
        expectTooMany(over, 'api_quota_exceeded');
        expect(over.body).toMatchObject({ limit: 5, used: 5, reset_at: nextMonthStart() });
        const untilReset = Date.parse(nextMonthStart()) - before;
        expect(Math.abs(untilReset - over.body.retry_after_seconds * 1000)).toBeLessThan(2_000);
        expectQuotaHeaders(over, 5);
        expect(used(over)).toBe(5);
        expect(await s.sql("select id from deals where title = 'Over quota'")).toHaveLength(0);

        // Every operation counts against it, GET /usage and tRPC included; other organizations do not.
        expectTooMany(await s.api('/usage', { key: org.apiKey }), 'api_quota_exceeded');
        await expect(s.trpc(org).pipeline.stages.query()).rejects.toMatchObject({
          status: 429,
          body: { code: 'api_quota_exceeded' },
        });
        expect((await s.api('/deals')).status).toBe(200);

        // The rejected calls did not use up the rate limit either: 5 counted calls of 200.
        const rate = parseItem(over.headers.get('ratelimit'));
        expect(rate).toMatchObject({ name: 'crud', r: 195 });
      });

      it('a changed quota applies to the first call made OWN_QUOTAS_REFRESH_MS after it, without a restart', async () => {
        const raised = await s.newOrg('Limits org raised', { api_calls: 1 });
        const lowered = await s.newOrg('Limits org lowered', { api_calls: 5 });
        expect((await s.api('/deals', { key: raised.apiKey })).status).toBe(200);
        expectTooMany(await s.api('/deals', { key: raised.apiKey }), 'api_quota_exceeded');
        for (let i = 0; i < 2; i++) expect((await s.api('/deals', { key: lowered.apiKey })).status).toBe(200);
        await setOrgQuota(s.running.db.orm.em.fork(), raised.orgId, { api_calls: 3 });
        await setOrgQuota(s.running.db.orm.em.fork(), lowered.orgId, { api_calls: 1 });
        // Idle meanwhile: the first call after the refresh time is judged by the new quota, not by the copy
        // read before the change (which once answered one more call with the old quota while it read again).
        await new Promise((r) => setTimeout(r, OWN_QUOTAS_REFRESH_MS + 100));
        const up = await s.api('/deals', { key: raised.apiKey });
        expect(up.status, up.text).toBe(200);
        expect(up.headers.get('x-api-quota-limit')).toBe('3');
        expect(used(up)).toBe(2);
        const down = await s.api('/deals', { key: lowered.apiKey });
        expectTooMany(down, 'api_quota_exceeded');
        expect(down.headers.get('x-api-quota-limit')).toBe('1');
      });
    });

    describe('GET /usage', () => {
      it('reports the period, each quota, the rate-limit groups and no alerts for a fresh organization', async () => {
        const org = await s.newOrg('Limits org', { ai_calls: 0 });
        await s.api('/deals', { key: org.apiKey });
        const res = await s.api('/usage', { key: org.apiKey });
        expect(res.status, res.text).toBe(200);
        const now = new Date();
        const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString();
        expect(res.body).toEqual({
          data: {
            period: { start, end: nextMonthStart() },
            quotas: {
              api_calls: {
                limit: 1_000_000,
                used: 2,
                remaining: 999_998,
                percent_used: 0,
                reset_at: nextMonthStart(),
              },
              ai_calls: { limit: 0, used: 0, remaining: 0, percent_used: 100, reset_at: nextMonthStart() },
            },
            rate_limits: [
              { group: 'crud', limit: 200, window_seconds: 60 },
              { group: 'ai', limit: 30, window_seconds: 60 },
              { group: 'search', limit: 60, window_seconds: 60 },
              { group: 'webhooks', limit: 30, window_seconds: 60 },
              { group: 'events', limit: 120, window_seconds: 60 },
              { group: 'default', limit: 300, window_seconds: 60 },
            ],
            alerts: [],
          },
        });
        expect(used(res)).toBe(2);
      });

      it('records the 80 % and 95 % alerts once each, and shows them', async () => {
        const org = await s.newOrg('Limits org', { api_calls: 40 });
        const usage = () => s.api('/usage', { key: org.apiKey });
        await burst(30, () => s.api('/deals?limit=1', { key: org.apiKey }));
        let res = await usage(); // call 31: 77.5 %
        expect(res.body.data.alerts).toEqual([]);
        expect(res.body.data.quotas.api_calls).toMatchObject({ used: 31, remaining: 9, percent_used: 77.5 });
        res = await usage(); // call 32: 80 %
        expect(res.body.data.alerts).toEqual([
          {
            quota: 'api_calls',
            threshold_percent: 80,
            used: 32,
            limit: 40,
            recorded_at: expect.stringMatching(ISO),
          },
        ]);
        const eighty = res.body.data.alerts[0];
        await burst(5, () => s.api('/deals?limit=1', { key: org.apiKey })); // calls 33-37
        res = await usage(); // call 38: 95 %
        expect(res.body.data.alerts).toEqual([
          eighty,
          {
            quota: 'api_calls',
            threshold_percent: 95,
            used: 38,
            limit: 40,
            recorded_at: expect.stringMatching(ISO),
          },
        ]);
        // Further calls, flushes and reads record nothing more.
        await new Promise((r) => setTimeout(r, 600));
        res = await usage(); // call 39
        expect(res.body.data.alerts).toHaveLength(2);
        expect(res.body.data.alerts[0]).toEqual(eighty);
        const rows = await s.sql('select quota, threshold_percent from usage_alerts where org_id = ?', [
          org.orgId,
        ]);
        expect(rows).toHaveLength(2);
      });

      it('another organization’s counts and alerts never show', async () => {
        const quiet = await s.newOrg('Limits org');
        const res = await s.api('/usage', { key: quiet.apiKey });
        expect(res.body.data.quotas.api_calls.used).toBe(1);
        expect(res.body.data.alerts).toEqual([]);
      });
    });

    it('counts survive a restart: the next call continues from the last one', async () => {
      const dataDir = driver === 'pglite' ? mkdtempSync(path.join(tmpdir(), 'crm-limits-')) : undefined;
      const first = await startTestServer(driver, dataDir ? { CRM_DATA_DIR: dataDir } : {});
      let second: RunningServer | undefined;
      try {
        const results = await burst(7, () => first.api('/deals'), 1);
        expect(results.map(used)).toEqual([1, 2, 3, 4, 5, 6, 7]);
        // A clean stop stores what was counted; the next start reads it back.
        await first.running.stop();
        const config = loadConfig(first.env);
        second = await startServer(config, createLogger(config));
        const after = await fetch(`${second.url}/api/v1/crm/deals`, {
          headers: { authorization: `Bearer ${first.orgA.apiKey}` },
        });
        expect(after.status).toBe(200);
        expect(after.headers.get('x-api-quota-used')).toBe('8');
      } finally {
        await second?.stop();
        await first.stop();
        if (dataDir) rmSync(dataDir, { recursive: true, force: true });
      }
    });

    it('a short window recovers: after it ends the key may call again', async () => {
      const short = await startTestServer(driver, {
        CRM_RATE_LIMIT_WINDOW_SECONDS: '2',
        CRM_RATE_LIMIT_CRUD: '3',
      });
      try {
        const results = await burst(4, () => short.api('/deals'), 1);
        expect(results.map((r) => r.status)).toEqual([200, 200, 200, 429]);
        const rejected = results[3] as ApiResponse;
        expect(rejected.body.retry_after_seconds).toBeLessThanOrEqual(2);
        expect(parseItem(rejected.headers.get('ratelimit-policy'))).toEqual({ name: 'crud', q: 3, w: 2 });
        await new Promise((r) => setTimeout(r, rejected.body.retry_after_seconds * 1000 + 100));
        const again = await short.api('/deals');
        expect(again.status).toBe(200);
        expect(parseItem(again.headers.get('ratelimit'))).toMatchObject({ name: 'crud', r: 2 });
        // The quota counted the three accepted calls and this one, not the rejected call.
        expect(used(again)).toBe(4);
      } finally {
        await short.stop();
      }
    });
  },
);
