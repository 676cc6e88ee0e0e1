import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { createOrganizationWithKey, type QuotaChange, setOrgQuota } from '@crm/api';
import { createCrmClient, createCrmRestClient } from '@crm/client';
import { loadConfig } from '@crm/config';
import pg from 'pg';
import { pino } from 'pino';
import { describe, inject } from 'vitest';
import { createLogger, type Logger } from '../src/logger.ts';
import { type RunningServer, startServer } from '../src/server.ts';

/** PostgreSQL runs when TEST_DATABASE_URL points at a server where we may create databases. */
const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL;

export type DriverName = 'pglite' | 'postgresql';
export const DRIVERS: Array<{ driver: DriverName; label: string; skip: boolean }> = [
  { driver: 'pglite', label: 'embedded PGlite', skip: false },
  {
    driver: 'postgresql',
    label: TEST_DATABASE_URL ? 'PostgreSQL' : 'PostgreSQL (skipped: TEST_DATABASE_URL is not set)',
    skip: !TEST_DATABASE_URL,
  },
];

/**
 * A suite on each database, the two side by side (each starts its own server on its own database), the
 * steps of each in order: the file takes its slower database's time instead of the sum of both.
 */
export function describeOnEachDatabase(title: (label: string) => string, body: (driver: DriverName) => void) {
  // The pair in a suite of its own: two calls in one file run one pair after the other, not four at once.
  describe(title('each database'), () => {
    for (const { driver, label, skip } of DRIVERS)
      describe.skipIf(skip)(title(label), { concurrent: true }, () => {
        describe('step by step', { concurrent: false }, () => body(driver));
      });
  });
}

export interface TestOrg {
  orgId: string;
  keyId: string;
  apiKey: string;
}

export interface TestServer {
  url: string;
  base: string;
  /** The environment the server's configuration was read from (to start another instance on the same database). */
  env: Record<string, string>;
  running: RunningServer;
  orgA: TestOrg;
  orgB: TestOrg;
  /** fetch against the API base with org A's key unless `key` says otherwise (`null`: no header). */
  api(path: string, init?: RequestInit & { key?: string | null; json?: unknown }): Promise<ApiResponse>;
  rest(org: TestOrg): ReturnType<typeof createCrmRestClient>;
  trpc(org: TestOrg): ReturnType<typeof createCrmClient>;
  /** Runs SQL on the server's database (to check what was, or was not, stored). */
  sql<T = Record<string, unknown>>(query: string, params?: unknown[]): Promise<T[]>;
  /** Another organization with its key (counters of its own), with its own monthly quotas if given. */
  newOrg(name: string, quotas?: QuotaChange): Promise<TestOrg>;
  stop(): Promise<void>;
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies
  body: any;
  text: string;
}

/**
 * Feature suites send hundreds of requests a minute with one key: they run with rate limits far above
 * the contract's, which the limits suite sets back (`CONTRACT_RATE_LIMITS`) to test them.
 */
const UNTHROTTLED: Record<string, string> = {
  CRM_RATE_LIMIT_CRUD: '1000000',
  CRM_RATE_LIMIT_AI: '1000000',
  CRM_RATE_LIMIT_SEARCH: '1000000',
  CRM_RATE_LIMIT_WEBHOOKS: '1000000',
  CRM_RATE_LIMIT_EVENTS: '1000000',
  CRM_RATE_LIMIT_DEFAULT: '1000000',
  // Every test signs in from 127.0.0.1; the per-account limit stays as configured.
  CRM_SIGN_IN_ATTEMPTS_PER_ADDRESS: '1000000',
};

/** The configured defaults: the contract's per-minute limits. */
export const CONTRACT_RATE_LIMITS: Record<string, string> = {
  CRM_RATE_LIMIT_CRUD: '200',
  CRM_RATE_LIMIT_AI: '30',
  CRM_RATE_LIMIT_SEARCH: '60',
  CRM_RATE_LIMIT_WEBHOOKS: '30',
  CRM_RATE_LIMIT_EVENTS: '120',
  CRM_RATE_LIMIT_DEFAULT: '300',
};

/** A line the server logged, parsed (pino's JSON). */
// biome-ignore lint/suspicious/noExplicitAny: log lines carry whatever fields the call site gave
export type LogLine = { level: number; msg: string; [field: string]: any };

/**
 * A logger at `level` whose lines are kept, parsed, in `lines` (and as written in `raw`), for tests of
 * what the server logs: pass `{ logger }` to startTestServer.
 */
export function memoryLogger(level = 'info'): { logger: Logger; lines: LogLine[]; raw: string[] } {
  const lines: LogLine[] = [];
  const raw: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      raw.push(String(chunk));
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level }, sink), lines, raw };
}

export async function createDatabase(adminUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `crm_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}

/** The migrated embedded database every in-memory server starts from (embedded-image.global.ts), read once. */
let embeddedImage: Blob | undefined;
export function embeddedImageOf(): Blob {
  embeddedImage ??= new Blob([readFileSync(inject('embeddedImage'))]);
  return embeddedImage;
}

/**
 * A new temporary data directory holding an empty, migrated embedded database, copied from the one the
 * global setup made: what the first `crm` command or server start would create there, without the ~10 s
 * of CPU that creating a cluster and migrating it costs. Tests of that first creation use an empty one.
 */
export function migratedDataDir(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  cpSync(path.join(inject('embeddedDataDir'), 'pglite'), path.join(dir, 'pglite'), { recursive: true });
  return dir;
}

export async function startTestServer(
  driver: DriverName,
  env: Record<string, string> = {},
  options: { logger?: Logger } = {},
): Promise<TestServer> {
  let dropDatabase: (() => Promise<void>) | undefined;
  const dbEnv: Record<string, string> = {};
  if (driver === 'postgresql') {
    if (!TEST_DATABASE_URL) throw new Error('TEST_DATABASE_URL is not set');
    const created = await createDatabase(TEST_DATABASE_URL);
    dbEnv.DATABASE_URL = created.url;
    // Two files at a time, each with servers and writers, keep this machine's cores busy: a new connection
    // may take longer than the production default of 2 s (seen once in the event feed's eight writers).
    // Tests of the timeout itself set their own.
    dbEnv.DATABASE_CONNECT_TIMEOUT_MS = '10000';
    dropDatabase = created.drop;
  } else {
    dbEnv.CRM_DATA_DIR = 'memory://';
  }
  const serverEnv = {
    NODE_ENV: 'test',
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'silent',
    CRM_BOOTSTRAP_ORG: 'false',
    ...UNTHROTTLED,
    ...dbEnv,
    ...env,
  };
  const loaded = loadConfig(serverEnv);
  // A new embedded database, in memory or in a data directory with none yet, starts from the image.
  const config =
    loaded.database.kind === 'pglite'
      ? { ...loaded, database: { ...loaded.database, image: embeddedImageOf() } }
      : loaded;
  const running = await startServer(config, options.logger ?? createLogger(config));
  const em = running.db.orm.em.fork();
  const a = await createOrganizationWithKey(em, 'Org A');
  const b = await createOrganizationWithKey(em, 'Org B');
  const orgA = { orgId: a.org_id, keyId: a.key_id, apiKey: a.api_key };
  const orgB = { orgId: b.org_id, keyId: b.key_id, apiKey: b.api_key };
  const base = `${running.url}/api/v1/crm`;

  return {
    url: running.url,
    base,
    env: serverEnv,
    running,
    orgA,
    orgB,
    async api(path, init = {}) {
      const { key = orgA.apiKey, json, ...rest } = init;
      const headers = new Headers(rest.headers);
      if (key !== null) headers.set('authorization', `Bearer ${key}`);
      let body = rest.body;
      if (json !== undefined) {
        body = JSON.stringify(json);
        if (!headers.has('content-type')) headers.set('content-type', 'application/json');
      }
      const res = await fetch(path.startsWith('http') ? path : `${base}${path}`, { ...rest, headers, body });
      const text = await res.text();
      let parsed: unknown;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = undefined;
      }
      return { status: res.status, headers: res.headers, body: parsed, text };
    },
    // Retrying off: tests of the server see each answer as it was given (a 429, a 503).
    rest: (org) => createCrmRestClient({ baseUrl: running.url, apiKey: org.apiKey, maxRetries: 0 }),
    trpc: (org) => createCrmClient({ baseUrl: running.url, apiKey: org.apiKey, maxRetries: 0 }),
    sql: (query, params = []) => running.db.orm.em.fork().execute(query, params as never[]),
    async newOrg(name, quotas) {
      const fork = running.db.orm.em.fork();
      const created = await createOrganizationWithKey(fork, name);
      if (quotas) await setOrgQuota(fork, created.org_id, quotas);
      return { orgId: created.org_id, keyId: created.key_id, apiKey: created.api_key };
    },
    async stop() {
      await running.stop();
      await dropDatabase?.();
    },
  };
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
export const MISSING_ID = '01890a5d-ac96-774b-bcce-b302099a8057';

/** The first instant of next month in UTC, as the quota headers give it. */
export function nextMonthStart(now = new Date()): string {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString();
}
