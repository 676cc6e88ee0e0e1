import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { crmCli, SERVER } from './crm-calls.ts';
import { API, type Fixtures, type LoadStats, measure, type Scenario } from './load.ts';
import { cpuMsOf, memoryOf, startServerProcess, UNTHROTTLED } from './processes.ts';
import { COMMON_COMPANIES, COMPANIES, type Shape, TERMS, writeDeals } from './scale-data.ts';
import { measureSequential } from './sequential.ts';

const env = process.env;
const LARGE_PG = Number(env.SCALE_DEALS ?? 1_000_000);
const LARGE_EMBEDDED = Number(env.SCALE_DEALS_EMBEDDED ?? 100_000);
const SMALL = Number(env.SCALE_SMALL ?? 10_000);
const SECONDS = Number(env.SCALE_SECONDS ?? 4);
const DATABASES = (env.SCALE_DATABASES ?? 'postgresql,pglite').split(',').map((d) => d.trim());
const SHAPES = (env.SCALE_SHAPES ?? 'today,common').split(',').map((d) => d.trim() as Shape);
/** SCALE_ONLY: the calls whose name holds one of these (comma-separated) parts; every call when unset. */
const ONLY = (env.SCALE_ONLY ?? '').split(',').filter(Boolean);
const ADMIN_URL =
  env.BENCH_DATABASE_URL || env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

const RESULTS_DIR = fileURLToPath(new URL('../results/', import.meta.url));

const log = (msg: string) =>
  process.stdout.write(`[scale ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

// ---- the CLI and the server --------------------------------------------------------------------------

/** Waits until the server has had nothing to do for a few seconds (the import's events worked off). */
async function untilIdle(pid: number, maxSeconds: number): Promise<number> {
  const t0 = performance.now();
  let quiet = 0;
  let last = cpuMsOf(pid) ?? 0;
  while ((performance.now() - t0) / 1000 < maxSeconds) {
    await new Promise((r) => setTimeout(r, 1_000));
    const now = cpuMsOf(pid) ?? last;
    quiet = now - last < 50 ? quiet + 1 : 0; // under 5% of a core
    last = now;
    if (quiet >= 3) break;
  }
  return (performance.now() - t0) / 1000;
}

/**
 * Waits until a PostgreSQL database's outbox holds no undispatched event (the imports' events fanned out
 * to webhooks): the dispatcher works in its database connection, which the server's idle CPU does not
 * show, and calls measured beside it shared the machine with it (docs/development.md, The outbox after a
 * large import). Returns the seconds waited.
 */
async function untilDrained(databaseUrl: string, maxSeconds: number): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const t0 = performance.now();
  let lastLog = 0;
  try {
    for (;;) {
      const { rows } = await client.query<{ n: string }>(
        'select count(*) as n from outbox_events where dispatched_at is null',
      );
      const seconds = (performance.now() - t0) / 1000;
      if (Number(rows[0]?.n) === 0 || seconds > maxSeconds) return seconds;
      if (seconds - lastLog >= 60) {
        log(
          `outbox: ${Number(rows[0]?.n).toLocaleString('en-US')} events not yet dispatched after ${seconds.toFixed(0)} s`,
        );
        lastLog = seconds;
      }
      await new Promise((r) => setTimeout(r, 5_000));
    }
  } finally {
    await client.end();
  }
}

async function get(url: string, key: string, pathAndQuery: string) {
  const res = await fetch(`${url}${API}${pathAndQuery}`, { headers: { authorization: `Bearer ${key}` } });
  const body = (await res.json()) as { data: unknown; meta?: Record<string, unknown> };
  if (!res.ok) throw new Error(`GET ${pathAndQuery}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

// ---- the calls -------------------------------------------------------------------------------------

interface OrgFixture {
  n: number;
  shape: Shape;
  key: string;
  dealIds: string[];
  middleId: string;
}

const call = (
  name: string,
  make: (o: OrgFixture, i: number) => { method?: string; path: string; body?: string },
) => ({
  name,
  make,
});

/** A common company name of the organization's shape, a different one each call. */
const commonCompany = (o: OrgFixture, i: number) =>
  o.shape === 'today'
    ? (COMPANIES[i % COMPANIES.length] as string)
    : (COMMON_COMPANIES[i % COMMON_COMPANIES.length] as string);
const searchFor = (term: string) => `/search?q=${encodeURIComponent(term)}`;

const CALLS = [
  call('GET /deals (first page)', () => ({ path: '/deals?limit=50' })),
  call('GET /deals?offset=N/2', (o) => ({ path: `/deals?limit=50&offset=${Math.floor(o.n / 2)}` })),
  call('GET /deals?after=(middle)', (o) => ({ path: `/deals?limit=50&after=${o.middleId}` })),
  // A sync's first page when everything changed within the hour (the import): the walk from its start.
  call('GET /deals?updated_since=<an hour ago> (the import)', () => ({
    path: `/deals?limit=50&updated_since=${new Date(Date.now() - 3_600_000).toISOString()}`,
  })),
  call('GET /contacts', () => ({ path: '/contacts?limit=50' })),
  call('GET /contacts?q=<a term most names hold>', (o) => ({
    path: `/contacts?limit=50&q=${TERMS[o.shape].contacts}`,
  })),
  call('GET /contacts?q=<a rare term>', (o) => ({
    path: `/contacts?limit=50&q=${encodeURIComponent(TERMS[o.shape].rare(o.n))}`,
  })),
  call('GET /pipeline/health', () => ({ path: '/pipeline/health' })),
  call('GET /briefing', () => ({ path: '/briefing' })),
  call('GET /coaching', () => ({ path: '/coaching' })),
  call('GET /deals/{id}', (o, i) => ({ path: `/deals/${o.dealIds[i % o.dealIds.length]}` })),
  call('GET /search?q=<a common company name>', (o, i) => ({ path: searchFor(commonCompany(o, i)) })),
  call('GET /search?q=<a prefix as typed>', (o) => ({ path: searchFor(TERMS[o.shape].prefix) })),
  call('GET /search?q=<a rare term>', (o) => ({ path: searchFor(TERMS[o.shape].rare(o.n)) })),
  call('GET /search?q=<no match>', (o) => ({ path: searchFor(TERMS[o.shape].none) })),
  call('GET /search?q=<two words>', (o, i) => ({
    path: searchFor(`${commonCompany(o, i).split(' ')[0]} renewal`),
  })),
  call('POST /deals/{id}/analyze', (o, i) => ({
    method: 'POST',
    path: `/deals/${o.dealIds[i % o.dealIds.length]}/analyze`,
  })),
  call('POST /deals/{id}/predict', (o, i) => ({
    method: 'POST',
    path: `/deals/${o.dealIds[i % o.dealIds.length]}/predict`,
  })),
  // The writes last: they add rows to the organizations measured above.
  call('POST /deals', (o, i) => ({
    method: 'POST',
    path: '/deals',
    body: JSON.stringify({
      title: `Bench ${i} for ${commonCompany(o, i)}`,
      company_name: commonCompany(o, i),
      value: 1000 + i,
    }),
  })),
  call('PATCH /deals/{id}', (o, i) => ({
    method: 'PATCH',
    path: `/deals/${o.dealIds[i % o.dealIds.length]}`,
    body: JSON.stringify({ value: 2000 + (i % 1000), notes: `bench note ${i}` }),
  })),
  // After the writes: what changed in the last minute (the writes just measured, not the import), the
  // call a mirror makes every minute; with tombstones.
  call('GET /deals?updated_since=<a minute ago>&include_deleted=true', () => ({
    path: `/deals?limit=50&include_deleted=true&updated_since=${new Date(Date.now() - 60_000).toISOString()}`,
  })),
].filter((c, i) => i === 0 || ONLY.length === 0 || ONLY.some((part) => c.name.includes(part)));

function scenarioOf(c: (typeof CALLS)[number], o: OrgFixture): Scenario {
  let i = 0;
  return {
    name: c.name,
    key: () => o.key,
    requests: () => [
      {
        setupRequest: (req) => {
          const { method = 'GET', path: p } = c.make(o, i++);
          return Object.assign(req, { method, path: `${API}${p}` });
        },
      },
    ],
  };
}

const NO_FIXTURES: Fixtures = { readKey: '', writeKey: '', dealIds: [], searchTerms: [] };

/** A call one request at a time, timed to the fraction of a millisecond (see measureSequential). */
function measureOne(url: string, pid: number, c: (typeof CALLS)[number], o: OrgFixture) {
  let i = 0;
  return measureSequential(
    url,
    o.key,
    () => {
      const { method = 'GET', path: p, body } = c.make(o, i++);
      return { method, path: `${API}${p}`, body };
    },
    { seconds: SECONDS, warmupSeconds: 1, pid },
  );
}

/** GET /deals at 10 connections, by autocannon. */
function measureConcurrent(url: string, pid: number, c: (typeof CALLS)[number], o: OrgFixture) {
  return measure(url, scenarioOf(c, o), NO_FIXTURES, {
    seconds: SECONDS,
    warmupSeconds: 1,
    connections: 10,
    repeats: 1,
    pid,
  });
}

// ---- one database ------------------------------------------------------------------------------------

interface Row {
  call: string;
  small: LoadStats;
  large: LoadStats;
}

interface ShapeResult {
  shape: Shape;
  import: { seconds: number; rowsPerSecond: number; cpuSeconds: number; smallSeconds: number };
  rows: Row[];
  concurrent: { small: LoadStats; large: LoadStats };
}

interface DatabaseResult {
  database: string;
  small: number;
  large: number;
  target: number;
  idleAfterSeconds: number;
  shapes: ShapeResult[];
  memoryMb?: number;
}

async function benchDatabase(
  label: string,
  dbEnv: Record<string, string>,
  large: number,
  target: number,
  dir: string,
): Promise<DatabaseResult> {
  const orgs: Array<{ n: number; shape: Shape; orgId: string; key: string; file: string }> = [];
  for (const shape of SHAPES)
    for (const n of [SMALL, large]) {
      const created = (await crmCli(dbEnv, 'org', 'create', `Scale ${shape} ${n}`)).lines[0] as {
        org_id: string;
        api_key: string;
      };
      const file = path.join(dir, `deals-${shape}-${n}.ndjson`);
      log(`${label}: writing ${n.toLocaleString('en-US')} deals (${shape}) to ${file}`);
      await writeDeals(file, n, shape);
      orgs.push({ n, shape, orgId: created.org_id, key: created.api_key, file });
    }
  const imports: Array<{ seconds: number; cpuSeconds: number }> = [];
  for (const o of orgs) {
    log(`${label}: crm import of ${o.n.toLocaleString('en-US')} deals (${o.shape})`);
    const run = await crmCli(dbEnv, 'import', o.file, '--org', o.orgId);
    rmSync(o.file, { force: true });
    const summary = run.lines[0] as { imported: number; rejected: number };
    if (summary.imported !== o.n) throw new Error(`import of ${o.file}: ${JSON.stringify(summary)}`);
    log(
      `${label}: imported ${o.n.toLocaleString('en-US')} (${o.shape}) in ${run.seconds.toFixed(1)} s (${Math.round(o.n / run.seconds)} rows/s, CLI CPU ${run.cpuSeconds.toFixed(0)} s)`,
    );
    imports.push(run);
  }
  const server = await startServerProcess('service', SERVER, { ...UNTHROTTLED, ...dbEnv }, 600_000);
  try {
    log(`${label}: server on ${server.url}; waiting until it is idle (the import's events worked off)`);
    let idleAfterSeconds = await untilIdle(server.pid, 1_800);
    if (dbEnv.DATABASE_URL) idleAfterSeconds += await untilDrained(dbEnv.DATABASE_URL, 3_600);
    log(`${label}: idle and the outbox dispatched after ${idleAfterSeconds.toFixed(0)} s`);
    const fixtures: OrgFixture[] = [];
    for (const o of orgs) {
      const first = await get(server.url, o.key, '/deals?limit=100');
      const middle = await get(server.url, o.key, `/deals?limit=1&offset=${Math.floor(o.n / 2)}`);
      if (first.meta?.total !== o.n) throw new Error(`org of ${o.n}: total ${String(first.meta?.total)}`);
      fixtures.push({
        n: o.n,
        shape: o.shape,
        key: o.key,
        dealIds: (first.data as Array<{ id: string }>).map((d) => d.id),
        middleId: (middle.data as Array<{ id: string }>)[0]?.id as string,
      });
    }
    const shapes: ShapeResult[] = [];
    for (const [k, shape] of SHAPES.entries()) {
      const [small, big] = fixtures.slice(2 * k, 2 * k + 2) as [OrgFixture, OrgFixture];
      const rows: Row[] = [];
      for (const c of CALLS) {
        const s = await measureOne(server.url, server.pid, c, small);
        const l = await measureOne(server.url, server.pid, c, big);
        log(
          `${label} [${shape}] ${c.name}: p50 ${ms(s.p50)} → ${ms(l.p50)} ms, mean ${ms(s.mean)} → ${ms(l.mean)} ms (${ratio(l.mean, s.mean)}), p99 ${ms(s.p99)} → ${ms(l.p99)} ms${s.non2xx + l.non2xx ? ` non-2xx ${JSON.stringify({ ...s.statuses, ...l.statuses })}` : ''}`,
        );
        rows.push({ call: c.name, small: s, large: l });
      }
      const list = CALLS[0] as (typeof CALLS)[number];
      const concurrent = {
        small: await measureConcurrent(server.url, server.pid, list, small),
        large: await measureConcurrent(server.url, server.pid, list, big),
      };
      log(
        `${label} [${shape}] GET /deals at 10 connections: ${concurrent.small.reqPerSec.toFixed(0)} → ${concurrent.large.reqPerSec.toFixed(0)} req/s`,
      );
      const [smallImport, largeImport] = imports.slice(2 * k, 2 * k + 2);
      shapes.push({
        shape,
        import: {
          seconds: largeImport?.seconds ?? Number.NaN,
          rowsPerSecond: large / (largeImport?.seconds ?? Number.NaN),
          cpuSeconds: largeImport?.cpuSeconds ?? Number.NaN,
          smallSeconds: smallImport?.seconds ?? Number.NaN,
        },
        rows,
        concurrent,
      });
    }
    const memory = memoryOf(server.pid);
    return {
      database: label,
      small: SMALL,
      large,
      target,
      idleAfterSeconds,
      shapes,
      ...(memory ? { memoryMb: Math.round(memory.rssMb) } : {}),
    };
  } finally {
    await server.stop();
  }
}

const ratio = (large: number, small: number) => `${(large / small).toFixed(2)}×`;
/** A sequential latency: two decimals below 10 ms, one below 100, whole above. */
const ms = (v: number) => v.toFixed(v < 10 ? 2 : v < 100 ? 1 : 0);

/** Under 20 ms, or within the target of the small organization's figure (issue 33's bar). */
const flat = (row: Row, target: number) => row.large.p50 < 20 || row.large.mean <= target * row.small.mean;

function formatResult(r: DatabaseResult): string {
  const n = (v: number) => v.toLocaleString('en-US');
  const lines = [
    `### ${r.database}: ${n(r.small)} against ${n(r.large)} deals (target: within ${r.target}×, or under 20 ms)`,
    '',
    `Server idle, and the outbox dispatched on PostgreSQL, ${r.idleAfterSeconds.toFixed(0)} s after start (the imports' events dispatched and placed in the feed).`,
  ];
  for (const sh of r.shapes)
    lines.push(
      '',
      `#### Shape "${sh.shape}"`,
      '',
      `Import of ${n(r.large)} deals (one contact each): ${sh.import.seconds.toFixed(0)} s, ${n(Math.round(sh.import.rowsPerSecond))} deals/s (CLI CPU ${sh.import.cpuSeconds.toFixed(0)} s); ${n(r.small)} in ${sh.import.smallSeconds.toFixed(1)} s.`,
      '',
      `| call (one at a time) | p50 ${n(r.small)} | p50 ${n(r.large)} | mean ${n(r.small)} → ${n(r.large)} | ratio (mean) | p99 ${n(r.small)} | p99 ${n(r.large)} | CPU ms/req ${n(r.small)} → ${n(r.large)} | within ${r.target}× or < 20 ms |`,
      '|---|---|---|---|---|---|---|---|---|',
      ...sh.rows.map(
        (row) =>
          `| ${row.call}${row.small.non2xx + row.large.non2xx ? ` (non-2xx: ${JSON.stringify({ ...row.small.statuses, ...row.large.statuses })})` : ''} | ${ms(row.small.p50)} | ${ms(row.large.p50)} | ${ms(row.small.mean)} → ${ms(row.large.mean)} | ${ratio(row.large.mean, row.small.mean)} | ${ms(row.small.p99)} | ${ms(row.large.p99)} | ${row.small.cpuMsPerRequest.toFixed(2)} → ${row.large.cpuMsPerRequest.toFixed(2)} | ${flat(row, r.target) ? 'yes' : 'NO'} |`,
      ),
      `| GET /deals at 10 connections (req/s) | ${sh.concurrent.small.reqPerSec.toFixed(0)} | ${sh.concurrent.large.reqPerSec.toFixed(0)} | | ${ratio(sh.concurrent.small.reqPerSec, sh.concurrent.large.reqPerSec)} slower | ${sh.concurrent.small.p99} | ${sh.concurrent.large.p99} | | ${sh.concurrent.large.reqPerSec * r.target >= sh.concurrent.small.reqPerSec ? 'yes' : 'NO'} |`,
    );
  if (r.memoryMb !== undefined) lines.push('', `Server RSS at the end: ${r.memoryMb} MB.`);
  return lines.join('\n');
}

// ---- main ----------------------------------------------------------------------------------------

async function postgres(dir: string): Promise<DatabaseResult | string> {
  const admin = new URL(ADMIN_URL);
  if (!['127.0.0.1', 'localhost'].includes(admin.hostname)) return `${admin.hostname} is not this machine`;
  const name = `crm_scale_${randomBytes(4).toString('hex')}`;
  const client = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
    await client.query(`create database ${name}`);
  } catch (err) {
    return `PostgreSQL unreachable: ${(err as Error).message}`;
  }
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  try {
    return await benchDatabase(
      'PostgreSQL',
      { DATABASE_URL: url.toString(), CRM_DATA_DIR: '' },
      LARGE_PG,
      2,
      dir,
    );
  } finally {
    if (env.SCALE_KEEP_DATABASE === 'true') log(`PostgreSQL: database ${name} kept (SCALE_KEEP_DATABASE)`);
    else await client.query(`drop database if exists ${name} with (force)`);
    await client.end();
  }
}

async function embedded(dir: string): Promise<DatabaseResult> {
  const dataDir = path.join(dir, 'data');
  mkdirSync(dataDir);
  return benchDatabase(
    'Embedded (PGlite)',
    { CRM_DATA_DIR: dataDir, DATABASE_URL: '' },
    LARGE_EMBEDDED,
    3,
    dir,
  );
}

const started = new Date();
const command = [
  ...[
    'SCALE_DEALS',
    'SCALE_DEALS_EMBEDDED',
    'SCALE_SMALL',
    'SCALE_SECONDS',
    'SCALE_DATABASES',
    'SCALE_SHAPES',
  ]
    .filter((k) => env[k])
    .map((k) => `${k}=${env[k]}`),
  'npm run bench:scale',
].join(' ');
log(`${command} — ${started.toISOString()} — ${os.availableParallelism()} cores`);
const sections: string[] = [];
for (const db of DATABASES) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'crm-scale-'));
  try {
    const result = db === 'pglite' ? await embedded(dir) : await postgres(dir);
    sections.push(typeof result === 'string' ? `### ${db}: skipped (${result})` : formatResult(result));
  } catch (err) {
    log(`${db} failed: ${(err as Error).stack}`);
    sections.push(`### ${db}: failed (${(err as Error).message})`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
const report = [
  `## npm run bench:scale, ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC`,
  '',
  `Command: \`${command}\`; ${SECONDS} s per call and organization, one request at a time after a 1 s warm-up; Node ${process.version}, ${os.availableParallelism()} cores.`,
  '',
  ...sections.flatMap((s) => [s, '']),
].join('\n');
process.stdout.write(`\n${report}\n`);
mkdirSync(RESULTS_DIR, { recursive: true });
writeFileSync(path.join(RESULTS_DIR, 'scale-latest.md'), report);
log(`wrote ${path.relative(process.cwd(), path.join(RESULTS_DIR, 'scale-latest.md'))}`);
process.exit(sections.some((x) => / (failed|skipped) \(/.test(x.split('\n')[0] ?? '')) ? 1 : 0);
