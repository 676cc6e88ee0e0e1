/**
 * `npm run bench:ai`: the AI features' speed on the built-in path (no language model), one request at a
 * time through HTTP: POST /deals/{id}/analyze and /predict on a deal with 20 stakeholders and 200
 * activities, GET /briefing and /coaching on an organization with 10,000 deals, on the embedded database
 * and on PostgreSQL (BENCH_DATABASE_URL or TEST_DATABASE_URL, admin URL; skipped when unreachable).
 * Targets: analyze and predict p99 < 50 ms; briefing and coaching < 300 ms. BENCH_AI_REQUESTS (default 200),
 * BENCH_AI_DATABASES (`pglite,postgresql`, the default, or one of them).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { seedAiOrganization } from './ai-seed.ts';
import { startServerProcess } from './processes.ts';

const DEALS = 10_000;
/** Which databases to run on (`pglite,postgresql`, the default, or one of them). */
const DATABASES = (process.env.BENCH_AI_DATABASES ?? 'pglite,postgresql').split(',');
const REQUESTS = Number(process.env.BENCH_AI_REQUESTS ?? 200);
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SERVER_SCRIPT = path.join(ROOT, 'apps/server/src/main.ts');
const ADMIN_URL =
  process.env.BENCH_DATABASE_URL ||
  process.env.TEST_DATABASE_URL ||
  'postgres://postgres@127.0.0.1:5432/postgres';
const log = (msg: string) =>
  process.stdout.write(`[bench:ai ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

interface Timing {
  operation: string;
  target: number;
  p50: number;
  p99: number;
  max: number;
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? 0;

async function time(
  operation: string,
  target: number,
  n: number,
  call: () => Promise<Response>,
): Promise<Timing> {
  for (let i = 0; i < 5; i++) await (await call()).arrayBuffer(); // warm-up
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    const res = await call();
    await res.arrayBuffer();
    ms.push(performance.now() - started);
    if (res.status !== 200) throw new Error(`${operation} answered ${res.status}`);
  }
  ms.sort((a, b) => a - b);
  return { operation, target, p50: quantile(ms, 0.5), p99: quantile(ms, 0.99), max: ms.at(-1) ?? 0 };
}

async function benchOne(
  label: string,
  env: Record<string, string>,
  database: Parameters<typeof seedAiOrganization>[0],
) {
  log(`${label}: seeding ${DEALS.toLocaleString('en-US')} deals`);
  const seeded = await seedAiOrganization(database, DEALS);
  const server = await startServerProcess(`service (${label})`, SERVER_SCRIPT, {
    ...env,
    LOG_LEVEL: 'warn',
    CRM_BOOTSTRAP_ORG: 'false',
  });
  try {
    const base = `${server.url}/api/v1/crm`;
    const headers = { authorization: `Bearer ${seeded.apiKey}` };
    const post = (p: string) => () => fetch(`${base}${p}`, { method: 'POST', headers });
    const get = (p: string) => () => fetch(`${base}${p}`, { headers });
    // The first predict starts the fit of the organization's model in a worker; time requests once it is in use.
    const fitStarted = performance.now();
    for (;;) {
      const body = await (await post(`/deals/${seeded.bigDealId}/predict`)()).text();
      if (body.includes('model fitted on')) break;
      if (performance.now() - fitStarted > 120_000)
        throw new Error('the win model was not fitted within 120 s');
      await new Promise((r) => setTimeout(r, 200));
    }
    log(
      `${label}: win model fitted on the closed deals, ${((performance.now() - fitStarted) / 1000).toFixed(1)} s after the first request`,
    );
    const results = [
      await time('POST /deals/{id}/analyze', 50, REQUESTS, post(`/deals/${seeded.bigDealId}/analyze`)),
      await time('POST /deals/{id}/predict', 50, REQUESTS, post(`/deals/${seeded.bigDealId}/predict`)),
      await time('GET /briefing', 300, Math.max(20, REQUESTS / 5), get('/briefing')),
      await time('GET /coaching', 300, Math.max(20, REQUESTS / 5), get('/coaching')),
    ];
    return results;
  } finally {
    await server.stop();
  }
}

function print(label: string, results: Timing[]) {
  const f = (v: number) => v.toFixed(1);
  process.stdout.write(
    `\n### ${label}\n\n| operation | p50 ms | p99 ms | max ms | target | met |\n|---|---|---|---|---|---|\n${results
      .map(
        (r) =>
          `| ${r.operation} | ${f(r.p50)} | ${f(r.p99)} | ${f(r.max)} | ${r.target === 50 ? 'p99' : 'every request'} < ${r.target} ms | ${
            (r.target === 50 ? r.p99 : r.max) < r.target ? 'yes' : 'no'
          } |`,
      )
      .join('\n')}\n`,
  );
}

if (DATABASES.includes('pglite')) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'crm-bench-ai-'));
  try {
    print(
      'embedded PGlite',
      await benchOne('PGlite', { CRM_DATA_DIR: dir }, { kind: 'pglite', dataDir: dir }),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const name = `crm_bench_ai_${randomBytes(5).toString('hex')}`;
const admin = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 5_000 });
let created = false;
try {
  if (!DATABASES.includes('postgresql')) throw new Error('not in BENCH_AI_DATABASES');
  await admin.connect();
  await admin.query(`create database ${name}`);
  created = true;
} catch (err) {
  log(`skipping PostgreSQL: ${(err as Error).message}`);
} finally {
  await admin.end().catch(() => undefined);
}
if (created) {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  try {
    print(
      'PostgreSQL',
      await benchOne(
        'PostgreSQL',
        { DATABASE_URL: url.toString() },
        {
          kind: 'postgresql',
          url: url.toString(),
          poolMax: 10,
          connectTimeoutMs: 10_000,
          queryTimeoutMs: 600_000,
        },
      ),
    );
  } finally {
    const c = new pg.Client({ connectionString: ADMIN_URL });
    await c.connect();
    await c.query(`drop database if exists ${name} with (force)`);
    await c.end();
  }
}
