import { describe, expect, it } from 'vitest';
import { CrmError } from '../src/index.ts';
import { crmFetch } from '../src/transport.ts';

/** A fetch that answers each call with the next status (the last one again once they run out). */
function answering(...statuses: number[]) {
  const calls: Array<{ method: string; url: string; key: string | null }> = [];
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const request = new Request(input, init);
    calls.push({ method: request.method, url: request.url, key: request.headers.get('Idempotency-Key') });
    const status = statuses[Math.min(calls.length - 1, statuses.length - 1)] as number;
    const body = status < 400 ? { data: {} } : { error: `status ${status}`, code: 'service_unavailable' };
    return new Response(JSON.stringify(body), {
      status,
      headers: { 'content-type': 'application/json', 'Retry-After': '0' },
    });
  };
  return { calls, fetch };
}

const send = (fetch: typeof globalThis.fetch, method: string, path: string, key?: string) =>
  crmFetch({ baseUrl: 'http://crm.test', apiKey: 'ck_test', fetch })(`http://crm.test${path}`, {
    method,
    headers: key ? { 'Idempotency-Key': key } : {},
    ...(method === 'GET' ? {} : { body: '{}' }),
  });

describe('what the client retries on a 503', () => {
  it('a read: retried until it answers', async () => {
    const server = answering(503, 200);
    expect((await send(server.fetch, 'GET', '/api/v1/crm/deals')).status).toBe(200);
    expect(server.calls).toHaveLength(2);
  });

  it('a create that honours Idempotency-Key: retried under one key the client made, on both doors', async () => {
    for (const path of ['/api/v1/crm/deals', '/trpc/deals.create']) {
      const server = answering(503, 201);
      expect((await send(server.fetch, 'POST', path)).status).toBe(201);
      expect(server.calls).toHaveLength(2);
      expect(server.calls[0]?.key).toMatch(/^crm-client-[0-9a-f]{32}$/);
      expect(server.calls[1]?.key).toBe(server.calls[0]?.key);
    }
  });

  it('any other change: not retried, with or without a key (the API ignores one there)', async () => {
    for (const [method, path] of [
      ['PATCH', '/api/v1/crm/deals/1'],
      ['DELETE', '/api/v1/crm/deals/1'],
      ['POST', '/api/v1/crm/webhooks'],
      ['POST', '/trpc/deals.update'],
      ['POST', '/trpc/ai.analyze'],
    ] as const) {
      const server = answering(503, 200);
      await expect(send(server.fetch, method, path, 'my-key')).rejects.toMatchObject({ status: 503 });
      expect(server.calls, `${method} ${path}`).toHaveLength(1);
      expect(server.calls[0]?.key).toBe('my-key');
    }
  });
});

describe('waiting before a retry', () => {
  it('a 429 is retried on any call; Retry-After in seconds or as a date', async () => {
    for (const retryAfter of ['0', new Date(Date.now() - 1000).toUTCString()]) {
      let n = 0;
      const fetch: typeof globalThis.fetch = async () =>
        ++n === 1
          ? new Response('{"error":"slow down","code":"rate_limited"}', {
              status: 429,
              headers: { 'Retry-After': retryAfter },
            })
          : new Response('{}', { status: 200 });
      const started = Date.now();
      expect((await send(fetch, 'PATCH', '/api/v1/crm/deals/1')).status).toBe(200);
      // A Retry-After read as "none" would wait the computed 0.25-0.5 s instead.
      expect(Date.now() - started).toBeLessThan(200);
    }
  });

  it('a Retry-After past maxRetryDelayMs is thrown at once', async () => {
    let calls = 0;
    const fetch: typeof globalThis.fetch = async () => {
      calls++;
      return new Response('{"error":"quota used up","code":"api_quota_exceeded"}', {
        status: 429,
        headers: { 'Retry-After': '86400' },
      });
    };
    const error = await send(fetch, 'GET', '/api/v1/crm/deals').catch((err: unknown) => err);
    expect(error).toBeInstanceOf(CrmError);
    expect(error).toMatchObject({ status: 429, code: 'api_quota_exceeded' });
    expect(calls).toBe(1);
  });

  it('an AbortSignal ends the wait between attempts', async () => {
    const fetch: typeof globalThis.fetch = async () =>
      new Response('{"error":"slow down","code":"rate_limited"}', {
        status: 429,
        headers: { 'Retry-After': '30' },
      });
    const controller = new AbortController();
    const started = Date.now();
    const call = crmFetch({ baseUrl: 'http://crm.test', apiKey: 'ck_test', fetch })(
      'http://crm.test/api/v1/crm/deals',
      { signal: controller.signal },
    );
    setTimeout(() => controller.abort(), 50);
    await expect(call).rejects.toMatchObject({ name: 'AbortError' });
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});
