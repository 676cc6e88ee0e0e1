import { spawn as spawnProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { crmProcess } from '../../cli/test/cli-process.ts';
import {
  CHILD_NODE_FLAGS,
  COMPILE_CACHE,
  firstKeyOf,
  ROOT,
  type ServerProcess,
  spawnServer as spawn,
} from './server-process.ts';

/** The server on an embedded data directory. */
const spawnServer = (dataDir: string): Promise<ServerProcess & { url: string }> =>
  spawn({ CRM_DATA_DIR: dataDir }) as Promise<ServerProcess & { url: string }>;

describe('the server process', () => {
  let dataDir: string;
  let server: ServerProcess;
  let apiKey: string;

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'crm-process-'));
    server = await spawnServer(dataDir);
    apiKey = await firstKeyOf(server);
  });
  afterAll(async () => {
    if (server.child.exitCode === null) {
      server.child.kill('SIGTERM');
      await server.exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('creates a default organization on first start and shows its key once, outside the log', () => {
    expect(apiKey).toMatch(/^ck_/);
    expect(server.stdout.join('\n')).not.toContain(apiKey);
  });

  it('prints a one-time sign-in link for the first admin, outside the log, that makes an admin of the new organization', async () => {
    const link = new RegExp(`${server.url}/admin/invite/([A-Za-z0-9_-]{32})`).exec(server.stderr());
    expect(link, server.stderr()).not.toBeNull();
    expect(server.stdout.join('\n')).not.toContain(link?.[1]);
    const token = link?.[1] as string;
    const described = await fetch(
      `${server.url}/admin/trpc/invitation.get?input=${encodeURIComponent(JSON.stringify({ token }))}`,
    );
    const invitation = (
      (await described.json()) as { result: { data: { role: string; expires_at: string } } }
    ).result.data;
    expect(invitation.role).toBe('admin');
    const hours = (Date.parse(invitation.expires_at) - Date.now()) / 3600_000;
    expect(hours).toBeGreaterThan(23.9);
    expect(hours).toBeLessThanOrEqual(24);
    const accepted = await fetch(`${server.url}/admin/trpc/invitation.accept`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: server.url },
      body: JSON.stringify({
        token,
        name: 'First Admin',
        email: 'first@example.com',
        password: 'first-admin-password',
      }),
    });
    expect(accepted.status).toBe(200);
    const cookie = accepted.headers.getSetCookie()[0]?.split(';')[0] ?? '';
    const me = await fetch(`${server.url}/admin/trpc/me`, { headers: { cookie } });
    const body = (await me.json()) as { result: { data: { user: { role: string }; org: { name: string } } } };
    expect(body.result.data.user.role).toBe('admin');
    expect(body.result.data.org.name).toBe('Default organization');
  });

  it('says, before the wait, that it creates the embedded database, and where it listens once ready', () => {
    const messages = server.stdout.map((line) => (JSON.parse(line) as { msg: string }).msg);
    expect(messages[0]).toBe(
      `creating the embedded database in ${dataDir} (first start: about half a minute)`,
    );
    expect(messages).toContain(
      `ready: dashboard ${server.url}/admin, API ${server.url}/api/v1/crm, reference ${server.url}/docs`,
    );
  });

  it('runs a crm command beside it on its embedded database: the key it creates works at once', async () => {
    const crm = (...args: string[]) =>
      crmProcess(args, { env: { PATH: process.env.PATH, CRM_DATA_DIR: dataDir, LOG_LEVEL: 'silent' } });
    const orgs = await crm('org', 'list');
    expect(orgs.code, orgs.stderr).toBe(0);
    const org = JSON.parse(orgs.stdout.trim().split('\n')[0] ?? '{}') as { org_id: string; name: string };
    expect(org.name).toBe('Default organization');
    const created = await crm('key', 'create', '--org', org.org_id, '--name', 'beside the server');
    expect(created.code, created.stderr).toBe(0);
    expect(created.stderr).toBe('');
    const key = (JSON.parse(created.stdout) as { api_key: string }).api_key;
    const res = await fetch(`${server.url}/api/v1/crm/deals`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(res.status).toBe(200);
    // Errors come back as the CLI prints them, with its exit codes.
    const wrong = await crm('key', 'revoke', 'not-a-uuid');
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toBe('error: key_id must be a UUID, got "not-a-uuid"\n');
  });

  it('answers /healthz and /readyz outside the versioned path', async () => {
    expect(await (await fetch(`${server.url}/healthz`)).json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(200);
  });

  it('serves the OpenAPI 3 document with every documented operation', async () => {
    const res = await fetch(`${server.url}/api/v1/crm/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { openapi: string; paths: Record<string, Record<string, unknown>> };
    expect(doc.openapi).toMatch(/^3\./);
    const operations = Object.entries(doc.paths).flatMap(([p, item]) =>
      Object.keys(item).map((m) => `${m.toUpperCase()} ${p}`),
    );
    expect(operations.sort()).toEqual(
      [
        'GET /events',
        'GET /events/{id}',
        'GET /deals',
        'POST /deals',
        'POST /deals/batch',
        'POST /contacts/batch',
        'POST /deals/query',
        'POST /contacts/query',
        'POST /companies/query',
        'GET /deals/{id}',
        'PATCH /deals/{id}',
        'DELETE /deals/{id}',
        'GET /contacts',
        'POST /contacts',
        'GET /contacts/{id}',
        'PATCH /contacts/{id}',
        'GET /contacts/{id}/deals',
        'GET /contacts/{id}/export',
        'POST /contacts/{id}/erase',
        'PUT /deals/{id}/stakeholders/{contact_id}',
        'DELETE /deals/{id}/stakeholders/{contact_id}',
        'GET /companies',
        'POST /companies',
        'POST /companies/batch',
        'GET /companies/{id}',
        'PATCH /companies/{id}',
        'DELETE /companies/{id}',
        'GET /pipeline/stages',
        'GET /pipeline/health',
        'GET /pipelines',
        'POST /pipelines',
        'GET /pipelines/{id}',
        'PATCH /pipelines/{id}',
        'DELETE /pipelines/{id}',
        'POST /pipelines/{id}/stages',
        'PATCH /pipelines/{id}/stages/{stage_id}',
        'DELETE /pipelines/{id}/stages/{stage_id}',
        'GET /custom-fields/{object}',
        'POST /custom-fields/{object}',
        'GET /custom-fields/{object}/{key}',
        'PATCH /custom-fields/{object}/{key}',
        'POST /custom-fields/{object}/{key}/convert',
        'DELETE /custom-fields/{object}/{key}',
        'POST /custom-fields/plan',
        'POST /custom-fields/apply',
        'GET /search',
        'GET /usage',
        'GET /usage/limits',
        'GET /webhooks',
        'POST /webhooks',
        'DELETE /webhooks/{id}',
        'PATCH /webhooks/{id}',
        'POST /webhooks/{id}/activate',
        'GET /webhooks/{id}/deliveries',
        'POST /webhooks/{id}/deliveries/{delivery_id}/replay',
        'POST /deals/{id}/analyze',
        'POST /deals/{id}/predict',
        'GET /briefing',
        'GET /coaching',
        'GET /activities',
        'POST /activities',
        'POST /activities/batch',
        'POST /activities/query',
        'GET /activities/{id}',
        'PATCH /activities/{id}',
        'DELETE /activities/{id}',
        'GET /deals/{id}/timeline',
        'GET /deals/{id}/history',
        'GET /deals/{id}/history/summary',
        'GET /contacts/{id}/history',
        'GET /companies/{id}/history',
        'GET /views',
        'POST /views',
        'GET /views/{id}',
        'PATCH /views/{id}',
        'DELETE /views/{id}',
      ].sort(),
    );
  });

  it('serves the API reference page and its script from the installed package', async () => {
    const page = await fetch(`${server.url}/docs`);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const html = await page.text();
    expect(html).toContain('/api/v1/crm/openapi.json');
    expect(html).not.toMatch(/https?:\/\/(?!127\.0\.0\.1)/);
    const script = await fetch(`${server.url}/docs/standalone.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toMatch(/javascript/);
    expect((await script.arrayBuffer()).byteLength).toBeGreaterThan(100_000);
  });

  it('logs one JSON line per request with method, path, status, duration, request id and organization', async () => {
    const res = await fetch(`${server.url}/api/v1/crm/deals?limit=1`, {
      headers: { authorization: `Bearer ${apiKey}`, 'x-request-id': 'trace-me-123' },
    });
    expect(res.headers.get('x-request-id')).toBe('trace-me-123');
    // The line comes once the response is written: wait for it, not for a fixed time.
    const logged = () => server.stdout.map((l) => JSON.parse(l)).find((l) => l.req_id === 'trace-me-123');
    await vi.waitFor(() => expect(logged()).toBeDefined(), { timeout: 10_000, interval: 20 });
    const line = logged();
    expect(line).toMatchObject({
      method: 'GET',
      path: '/api/v1/crm/deals',
      status: 200,
      duration_ms: expect.any(Number),
      org_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(server.stdout.join('\n')).not.toContain(apiKey);
  });

  it('on SIGTERM finishes in-flight requests, closes the database, and keeps every acknowledged write', async () => {
    const post = (i: number) =>
      fetch(`${server.url}/api/v1/crm/deals`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ title: `shutdown-${i}` }),
      }).then(
        (r) => r.status,
        () => 0,
      );
    const inFlight = Array.from({ length: 40 }, (_, i) => post(i));
    await new Promise((r) => setTimeout(r, 30));
    server.child.kill('SIGTERM');
    const statuses = await Promise.all(inFlight);
    const exit = await server.exited;
    expect(exit, `exit ${exit}; stderr: ${server.stderr()}`).toBe(0);
    expect(server.stdout.some((l) => l.includes('stopped cleanly'))).toBe(true);
    const acknowledged = statuses.filter((s) => s === 201).length;
    expect(acknowledged).toBeGreaterThan(0);
    expect(statuses.every((s) => s === 201 || s === 0)).toBe(true);

    server = await spawnServer(dataDir);
    const list = await fetch(`${server.url}/api/v1/crm/deals?limit=100`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    const body = (await list.json()) as { data: Array<{ title: string }> };
    const kept = body.data.filter((d) => d.title.startsWith('shutdown-')).length;
    expect(kept).toBe(acknowledged);
  });

  it('after a crash (SIGKILL) restarts at once on the same directory with every acknowledged write', async () => {
    const statuses = [];
    for (const title of ['crash-1', 'crash-2', 'crash-3']) {
      const res = await fetch(`${server.url}/api/v1/crm/deals`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ title }),
      });
      statuses.push(res.status);
    }
    expect(statuses).toEqual([201, 201, 201]);
    server.child.kill('SIGKILL');
    await server.exited;

    // The dead process's lock is taken over without waiting for it to go stale.
    server = await spawnServer(dataDir);
    const list = await fetch(`${server.url}/api/v1/crm/deals?limit=100`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    const body = (await list.json()) as { data: Array<{ title: string }> };
    expect(body.data.filter((d) => d.title.startsWith('crash-')).map((d) => d.title)).toEqual([
      'crash-3',
      'crash-2',
      'crash-1',
    ]);
  });
});

const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL;

describe('the server process on PostgreSQL', () => {
  it.skipIf(!TEST_DATABASE_URL)(
    'stops, naming it in one log line, on a database DATABASE_URL names that is not there, and creates none',
    async () => {
      const name = `crm_missing_${randomBytes(6).toString('hex')}`;
      const url = new URL(TEST_DATABASE_URL as string);
      url.pathname = `/${name}`;
      const child = spawnProcess(process.execPath, [...CHILD_NODE_FLAGS, 'apps/server/src/main.ts'], {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH,
          ...COMPILE_CACHE,
          PORT: '0',
          HOST: '127.0.0.1',
          DATABASE_URL: url.toString(),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => {
        stdout += d;
      });
      child.stderr.on('data', (d) => {
        stderr += d;
      });
      const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
      // One that starts after all (on a database it made) is stopped, not waited for.
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      const code = await exited.finally(() => clearTimeout(timer));
      const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await admin.connect();
      try {
        const found = await admin.query('select 1 from pg_database where datname = $1', [name]);
        if (found.rowCount) await admin.query(`drop database ${name} with (force)`);
        expect(found.rowCount).toBe(0);
        expect(code).toBe(1);
        expect(stderr).toBe('');
        const last = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}');
        expect(last).toEqual({
          level: 60,
          time: expect.any(String),
          msg: `no database "${name}" on PostgreSQL at ${url.host} (DATABASE_URL): check its name, or create it with \`npm run crm -- migrate\``,
        });
      } finally {
        await admin.end();
      }
    },
    30_000,
  );
});
