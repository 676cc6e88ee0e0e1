import { loadConfig } from '@crm/config';
import { type Database, openDatabase } from '@crm/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migratedImage } from '../../db/test/embedded-image.ts';
import {
  ApiError,
  type AuthedContext,
  admitRequest,
  createOrganizationWithKey,
  Limits,
  type Log,
  setOrgQuota,
} from '../src/index.ts';

/**
 * The AI operations are built elsewhere; until they are merged, the AI group and its quota are tested
 * here, through the same `admitRequest` every REST and tRPC call goes through.
 */

const silent: Log = { info: () => undefined, warn: () => undefined, error: () => undefined };

describe('limits of the AI and webhooks groups (embedded database, injected clock)', () => {
  let db: Database;
  let limits: Limits;
  let clock = Date.parse('2026-11-30T23:59:50Z');

  beforeAll(async () => {
    db = await openDatabase({ kind: 'pglite', dataDir: 'memory://', image: migratedImage() }, 'test');
    const config = loadConfig({
      LOG_LEVEL: 'silent',
      CRM_DATA_DIR: 'memory://',
      CRM_USAGE_FLUSH_INTERVAL_MS: '60000',
    });
    limits = await Limits.create(config.limits, db.orm, silent, { now: () => clock });
  });
  afterAll(async () => {
    await limits?.close();
    await db?.close();
  });

  async function caller(quotas: { api_calls?: number; ai_calls?: number } = {}) {
    const em = db.orm.em.fork();
    const created = await createOrganizationWithKey(em, 'AI org');
    if (Object.keys(quotas).length > 0) await setOrgQuota(em, created.org_id, quotas);
    return { orgId: created.org_id, apiKeyId: created.key_id };
  }

  /** What a procedure of the group would see: the headers on its response, or the error it answers. */
  async function admit(principal: { orgId: string; apiKeyId: string }, group: 'ai' | 'webhooks' | 'crud') {
    const ctx = { services: { limits }, principal, response: { headers: {} } } as unknown as AuthedContext;
    try {
      await admitRequest(ctx, group);
      return { headers: ctx.response.headers, error: undefined };
    } catch (err) {
      return { headers: ctx.response.headers, error: err as ApiError };
    }
  }

  it('an AI call consumes the AI quota and the API quota, and carries both sets of headers', async () => {
    const principal = await caller({ ai_calls: 2 });
    const first = await admit(principal, 'ai');
    expect(first.error).toBeUndefined();
    expect(first.headers).toMatchObject({
      'RateLimit-Policy': '"ai";q=30;w=60',
      RateLimit: '"ai";r=29;t=60',
      'X-API-Quota-Used': '1',
      'X-AI-Quota-Limit': '2',
      'X-AI-Quota-Used': '1',
      'X-AI-Quota-Remaining': '1',
      'X-AI-Quota-Reset': '2026-12-01T00:00:00.000Z',
    });
    const crud = await admit(principal, 'crud');
    expect(crud.headers['X-API-Quota-Used']).toBe('2');
    expect(crud.headers['X-AI-Quota-Used']).toBeUndefined();
    expect((await admit(principal, 'ai')).headers['X-AI-Quota-Used']).toBe('2');

    const over = await admit(principal, 'ai');
    expect(over.error).toBeInstanceOf(ApiError);
    expect(over.error?.status).toBe(429);
    expect(over.error?.code).toBe('ai_quota_exceeded');
    expect(over.error?.extra).toEqual({
      retry_after_seconds: 10,
      limit: 2,
      used: 2,
      remaining: 0,
      reset_at: '2026-12-01T00:00:00.000Z',
    });
    expect(over.error?.headers).toEqual({ 'Retry-After': '10' });
    // Rejected: neither quota moved, and the rate limit gave its point back.
    expect(over.headers).toMatchObject({
      'X-API-Quota-Used': '3',
      'X-AI-Quota-Used': '2',
      RateLimit: '"ai";r=28;t=60',
    });
    expect((await admit(principal, 'crud')).headers['X-API-Quota-Used']).toBe('4');
  });

  it('the AI group allows 30 calls a minute per key, the webhooks group 30', async () => {
    for (const group of ['ai', 'webhooks'] as const) {
      const principal = await caller();
      const results = [];
      for (let i = 0; i < 31; i++) results.push(await admit(principal, group));
      expect(results.slice(0, 30).every((r) => r.error === undefined)).toBe(true);
      const last = results[30];
      expect(last?.error?.code).toBe('rate_limited');
      expect(last?.error?.extra).toMatchObject({ limit: 30, used: 30, remaining: 0 });
      expect(last?.headers).toMatchObject({ 'X-API-Quota-Used': '30', RateLimit: `"${group}";r=0;t=60` });
    }
  });

  it('a new UTC month starts every count from zero', async () => {
    const principal = await caller({ api_calls: 3 });
    for (let i = 0; i < 3; i++) expect((await admit(principal, 'crud')).error).toBeUndefined();
    expect((await admit(principal, 'crud')).error?.code).toBe('api_quota_exceeded');
    clock = Date.parse('2026-12-01T00:00:01Z');
    const next = await admit(principal, 'crud');
    expect(next.error).toBeUndefined();
    expect(next.headers).toMatchObject({
      'X-API-Quota-Used': '1',
      'X-API-Quota-Reset': '2027-01-01T00:00:00.000Z',
    });
    // The old month's counts were kept apart in the database.
    await limits.flush();
    const rows = await db.orm.em
      .fork()
      .execute<Array<{ period: string; used: unknown }>>(
        "select period, used from usage_counters where org_id = ? and quota = 'api_calls' order by period",
        [principal.orgId],
      );
    expect(rows.map((r) => [r.period, Number(r.used)])).toEqual([
      ['2026-11', 3],
      ['2026-12', 1],
    ]);
  });
});

describe('how long own quotas are trusted (CRM_QUOTA_REFRESH_MS, injected clock)', () => {
  it('a changed quota applies to the calls that start that long after it is read, not sooner', async () => {
    const db = await openDatabase({ kind: 'pglite', dataDir: 'memory://', image: migratedImage() }, 'test');
    let clock = Date.parse('2026-11-10T12:00:00Z');
    const config = loadConfig({
      LOG_LEVEL: 'silent',
      CRM_DATA_DIR: 'memory://',
      CRM_QUOTA_REFRESH_MS: '1000',
    });
    expect(config.limits.quotaRefreshMs).toBe(1000);
    const limits = await Limits.create(config.limits, db.orm, silent, { now: () => clock });
    try {
      const em = db.orm.em.fork();
      const created = await createOrganizationWithKey(em, 'Refresh org');
      const principal = { orgId: created.org_id, apiKeyId: created.key_id };
      const admit = async () => {
        const ctx = {
          services: { limits },
          principal,
          response: { headers: {} },
        } as unknown as AuthedContext;
        await admitRequest(ctx, 'crud');
        return (ctx.response.headers as Record<string, string>)['X-API-Quota-Limit'];
      };
      expect(await admit()).toBe('1000000');
      await setOrgQuota(em, created.org_id, { api_calls: 500 });
      clock += 999;
      expect(await admit()).toBe('1000000');
      clock += 1;
      expect(await admit()).toBe('500');
    } finally {
      await limits.close();
      await db.close();
    }
  });
});
