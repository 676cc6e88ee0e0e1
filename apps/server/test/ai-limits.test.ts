import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ApiResponse,
  CONTRACT_RATE_LIMITS,
  DRIVERS,
  nextMonthStart,
  startTestServer,
  type TestOrg,
  type TestServer,
} from './harness.ts';

/**
 * The limits on the operations they are meant for, end to end: the four AI operations consume the AI
 * quota (and the API quota) and share the `ai` group's 30 a minute; GET /webhooks has its own group.
 */

const aiUsed = (res: ApiResponse) => Number(res.headers.get('x-ai-quota-used'));
const apiUsed = (res: ApiResponse) => Number(res.headers.get('x-api-quota-used'));

for (const { driver, label, skip } of DRIVERS) {
  describe.skipIf(skip)(`AI quota and the ai and webhooks groups on ${label}`, () => {
    let s: TestServer;

    async function newDeal(org: TestOrg, title: string): Promise<string> {
      const res = await s.api('/deals', { method: 'POST', key: org.apiKey, json: { title } });
      expect(res.status, res.text).toBe(201);
      return res.body.data.id;
    }

    /** The four AI operations on one deal, in the order a client might call them. */
    const aiCalls = (org: TestOrg, dealId: string) => [
      () => s.api(`/deals/${dealId}/analyze`, { method: 'POST', key: org.apiKey }),
      () => s.api(`/deals/${dealId}/predict`, { method: 'POST', key: org.apiKey }),
      () => s.api('/briefing', { key: org.apiKey }),
      () => s.api('/coaching', { key: org.apiKey }),
    ];

    beforeAll(async () => {
      s = await startTestServer(driver, CONTRACT_RATE_LIMITS);
    });
    afterAll(async () => {
      await s?.stop();
    });

    it('each AI operation uses one AI call and one API call; other operations carry no AI quota headers', async () => {
      const org = await s.newOrg('AI limits org', { ai_calls: 100 });
      const dealId = await newDeal(org, 'Counted');
      const created = await s.api(`/deals/${dealId}`, { key: org.apiKey });
      expect(created.headers.get('x-ai-quota-used')).toBeNull();
      let api = apiUsed(created);

      let ai = 0;
      for (const call of aiCalls(org, dealId)) {
        const res = await call();
        expect(res.status, res.text).toBe(200);
        ai += 1;
        api += 1;
        expect(aiUsed(res)).toBe(ai);
        expect(apiUsed(res)).toBe(api);
        expect(res.headers.get('x-ai-quota-limit')).toBe('100');
        expect(res.headers.get('x-ai-quota-remaining')).toBe(String(100 - ai));
        expect(res.headers.get('x-ai-quota-reset')).toBe(nextMonthStart());
        expect(res.headers.get('ratelimit-policy')).toBe('"ai";q=30;w=60');
      }
      const usage = await s.api('/usage', { key: org.apiKey });
      expect(usage.body.data.quotas.ai_calls).toMatchObject({ limit: 100, used: 4, remaining: 96 });
    });

    it('past the AI quota an AI operation answers 429 ai_quota_exceeded, stores nothing, and other operations go on', async () => {
      const org = await s.newOrg('AI limits org', { ai_calls: 2 });
      const dealId = await newDeal(org, 'Quota');
      const [analyze, predict, briefing] = aiCalls(org, dealId);
      expect((await predict?.())?.status).toBe(200);
      expect((await briefing?.())?.status).toBe(200);

      const over = (await analyze?.()) as ApiResponse;
      expect(over.status, over.text).toBe(429);
      expect(over.body).toMatchObject({
        code: 'ai_quota_exceeded',
        limit: 2,
        used: 2,
        remaining: 0,
        reset_at: nextMonthStart(),
      });
      expect(over.headers.get('retry-after')).toBe(String(over.body.retry_after_seconds));
      expect(over.headers.get('x-ai-quota-remaining')).toBe('0');
      // The rejected analysis changed nothing: no stored analysis, no health, no activity, no event.
      expect(await s.sql('select id from deal_analyses where deal_id = ?', [dealId])).toHaveLength(0);
      const detail = (await s.api(`/deals/${dealId}`, { key: org.apiKey })).body.data;
      expect(detail.deal.deal_health).toBeNull();
      expect(detail.recent_activities.map((a: { type: string }) => a.type)).toEqual(['deal_created']);
      expect(
        await s.sql(
          `select id from outbox_events where type = 'analysis.completed' and payload::jsonb->'data'->>'deal_id' = ?`,
          [dealId],
        ),
      ).toHaveLength(0);

      // The AI quota stops AI operations only; another organization's AI calls are its own.
      expect((await s.api('/deals', { key: org.apiKey })).status).toBe(200);
      expect((await s.api('/coaching')).status).toBe(200);
    });

    it('the 31st AI call in a minute answers 429 rate_limited in the ai group', async () => {
      const org = await s.newOrg('AI limits org');
      const dealId = await newDeal(org, 'Burst');
      const calls = aiCalls(org, dealId);
      const results: ApiResponse[] = [];
      for (let i = 0; i < 31; i++)
        results.push(await (calls[i % calls.length] as () => Promise<ApiResponse>)());
      expect(results.slice(0, 30).map((r) => r.status)).toEqual(Array(30).fill(200));
      const rejected = results[30] as ApiResponse;
      expect(rejected.status, rejected.text).toBe(429);
      expect(rejected.body).toMatchObject({ code: 'rate_limited', limit: 30, used: 30, remaining: 0 });
      expect(rejected.headers.get('ratelimit')).toMatch(/^"ai";r=0;t=\d+$/);
      // A rejected call used no AI quota.
      expect(aiUsed(rejected)).toBe(30);
      // Other groups are unaffected.
      expect((await s.api('/deals', { key: org.apiKey })).status).toBe(200);
    });

    it('GET /webhooks is limited to 30 a minute in its own group', async () => {
      const org = await s.newOrg('AI limits org');
      const results: ApiResponse[] = [];
      for (let i = 0; i < 31; i++) results.push(await s.api('/webhooks', { key: org.apiKey }));
      expect(results.slice(0, 30).every((r) => r.status === 200)).toBe(true);
      expect(results[0]?.headers.get('ratelimit-policy')).toBe('"webhooks";q=30;w=60');
      expect(results[30]?.status).toBe(429);
      expect(results[30]?.body).toMatchObject({ code: 'rate_limited', limit: 30 });
      // Creating endpoints is in the default group, not held back by the list's limit.
      const create = await s.api('/webhooks', {
        method: 'POST',
        key: org.apiKey,
        json: { url: 'https://example.com/hook', events: ['deal.created'] },
      });
      expect(create.headers.get('ratelimit-policy')).toBe('"default";q=300;w=60');
    });
  });
}
