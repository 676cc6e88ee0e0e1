import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVERS, MISSING_ID, startTestServer, type TestServer } from './harness.ts';

const APP = 'https://app.example.com';

for (const { driver, label, skip } of DRIVERS) {
  describe.skipIf(skip)(`HEAD and CORS on ${label}`, () => {
    let s: TestServer;
    let plain: TestServer;
    beforeAll(async () => {
      s = await startTestServer(driver, { CRM_CORS_ORIGINS: `${APP}, http://localhost:5173` });
      plain = await startTestServer(driver);
    });
    afterAll(async () => {
      await s?.stop();
      await plain?.stop();
    });

    it('HEAD answers every GET route with its status and headers and no body', async () => {
      const get = await s.api('/deals');
      const head = await s.api('/deals', { method: 'HEAD' });
      expect(head.status).toBe(200);
      expect(head.text).toBe('');
      expect(head.headers.get('content-type')).toBe(get.headers.get('content-type'));
      expect(head.headers.get('ratelimit-policy')).toBe(get.headers.get('ratelimit-policy'));
      expect((await s.api(`/deals/${MISSING_ID}`, { method: 'HEAD' })).status).toBe(404);
      expect((await s.api('/deals', { method: 'HEAD', key: null })).status).toBe(401);
      for (const path of [
        '/contacts',
        '/pipeline/stages',
        '/pipeline/health',
        '/usage',
        '/webhooks',
        '/search?q=ab',
      ])
        expect((await s.api(path, { method: 'HEAD' })).status, path).toBe(200);
    });

    it('HEAD on a route without GET answers 405 naming the methods it has', async () => {
      const res = await s.api(`/deals/${MISSING_ID}/analyze`, { method: 'HEAD' });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
    });

    it('a preflight from a configured origin is answered with what the API accepts', async () => {
      const res = await fetch(`${s.base}/deals`, {
        method: 'OPTIONS',
        headers: {
          origin: APP,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization, content-type, idempotency-key',
        },
      });
      expect(res.status).toBe(204);
      expect(res.headers.get('access-control-allow-origin')).toBe(APP);
      expect(res.headers.get('access-control-allow-methods')).toContain('POST');
      expect(res.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('idempotency-key');
      expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    });

    it('answers from a configured origin carry CORS headers, errors included, and expose the limit headers', async () => {
      const ok = await s.api('/deals', { headers: { origin: APP } });
      expect(ok.headers.get('access-control-allow-origin')).toBe(APP);
      expect(ok.headers.get('vary')).toMatch(/origin/i);
      expect(ok.headers.get('access-control-expose-headers')).toMatch(/RateLimit/);
      expect(ok.headers.get('access-control-expose-headers')).toMatch(/X-API-Quota-Remaining/);
      const unauthorized = await s.api('/deals', { key: null, headers: { origin: APP } });
      expect(unauthorized.status).toBe(401);
      expect(unauthorized.headers.get('access-control-allow-origin')).toBe(APP);
    });

    it('another origin gets no CORS headers, and a preflight from it is not approved', async () => {
      const res = await s.api('/deals', { headers: { origin: 'https://evil.example' } });
      expect(res.status).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      const preflight = await fetch(`${s.base}/deals`, {
        method: 'OPTIONS',
        headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
      });
      expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    });

    it('CORS is off by default', async () => {
      const res = await plain.api('/deals', { headers: { origin: APP }, key: plain.orgA.apiKey });
      expect(res.status).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
    });
  });
}
