/**
 * `npm run bench`: seeds 2 organizations × 10,000 deals on the embedded database and on PostgreSQL, then
 * load-tests the service and a plain node:http + SQL baseline on each, and prints / writes the comparison.
 * Beside it, the service's GET and POST /deals with 20 custom fields against without (issue 29): two
 * twins of the organizations with the fields, each pair measured in turns.
 * BENCH_DURATION (seconds per measured run, default 6); BENCH_REPEAT (measured runs per scenario, default 3); BENCH_DATABASE_URL or TEST_DATABASE_URL (admin URL).
 * For a focused look while working: BENCH_ONLY (comma-separated scenario names, e.g. "POST /deals") and
 * BENCH_DATABASES ("pglite", "postgresql" or both, comma-separated).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import {
  CUSTOM_PAIRS,
  type Fixtures,
  type LoadStats,
  MCP_SCENARIO,
  measure,
  measurePair,
  SCENARIOS,
  stopCurrentLoad,
} from './load.ts';
import { type Child, memoryOf, startServerProcess, UNTHROTTLED } from './processes.ts';
import {
  type BenchReport,
  type DatabaseReport,
  formatText,
  type PairResult,
  pairResult,
  type ScenarioResult,
  scenarioResult,
  writeResults,
} from './report.ts';
import { seed } from './seed.ts';

const ORGS = 2;
const DEALS_PER_ORG = 10_000;
const CONNECTIONS = 50;
const WARMUP_SECONDS = 2;
const duration = Number(process.env.BENCH_DURATION ?? 6);
if (!Number.isFinite(duration) || duration <= 0 || duration > 120) {
  process.stderr.write('BENCH_DURATION must be a number of seconds between 0 and 120\n');
  process.exit(1);
}
const repeats = Number(process.env.BENCH_REPEAT ?? 3);
if (!Number.isInteger(repeats) || repeats < 1 || repeats > 9) {
  process.stderr.write('BENCH_REPEAT must be a whole number from 1 to 9\n');
  process.exit(1);
}

const listEnv = (name: string) =>
  process.env[name]
    ?.split(',')
    .map((v) => v.trim())
    .filter(Boolean);
const only = listEnv('BENCH_ONLY');
const scenarios = only ? SCENARIOS.filter((s) => only.includes(s.name)) : SCENARIOS;
const serviceOnly = only && !only.includes(MCP_SCENARIO.name) ? [] : [MCP_SCENARIO];
const pairs = only ? CUSTOM_PAIRS.filter((p) => only.includes(p.name)) : CUSTOM_PAIRS;
if (scenarios.length + serviceOnly.length + pairs.length === 0) {
  process.stderr.write(
    `BENCH_ONLY names no scenario; they are: ${[...SCENARIOS, MCP_SCENARIO, ...CUSTOM_PAIRS].map((s) => s.name).join(', ')}\n`,
  );
  process.exit(1);
}
const databases = listEnv('BENCH_DATABASES') ?? ['pglite', 'postgresql'];
if (databases.some((d) => d !== 'pglite' && d !== 'postgresql')) {
  process.stderr.write('BENCH_DATABASES takes pglite, postgresql or both, comma-separated\n');
  process.exit(1);
}

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SERVER_SCRIPT = path.join(ROOT, 'apps/server/src/main.ts');
const BASELINE_SCRIPT = fileURLToPath(new URL('./baseline-server.ts', import.meta.url));
const RESULTS_DIR = fileURLToPath(new URL('../results/', import.meta.url));
const ADMIN_URL =
  process.env.BENCH_DATABASE_URL ||
  process.env.TEST_DATABASE_URL ||
  'postgres://postgres@127.0.0.1:5432/postgres';

const log = (msg: string) =>
  process.stdout.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

// ---- cleanup, also on Ctrl+C ----------------------------------------------------------------------

const cleanups = new Set<() => Promise<void>>();
function onCleanup(fn: () => Promise<void>): () => Promise<void> {
  cleanups.add(fn);
  return async () => {
    cleanups.delete(fn);
    await fn();
  };
}
async function cleanupAll(): Promise<void> {
  // Latest first: children before the database they use.
  for (const fn of [...cleanups].reverse()) {
    cleanups.delete(fn);
    await fn().catch((err: unknown) => log(`cleanup failed: ${(err as Error).message}`));
  }
}

let interrupted = false;
class Interrupted extends Error {}
function onSignal(signal: NodeJS.Signals) {
  if (interrupted) process.exit(130);
  interrupted = true;
  log(`${signal}: stopping the load and cleaning up (again to force)`);
  stopCurrentLoad();
  cleanupAll().finally(() => process.exit(130));
}
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);
const checkInterrupted = () => {
  if (interrupted) throw new Interrupted('interrupted');
};

// ---- one database --------------------------------------------------------------------------------

interface Target {
  label: string;
  /** Service environment (DATABASE_URL or CRM_DATA_DIR). */
  serviceEnv: Record<string, string>;
  baselineEnv: Record<string, string>;
  seedConfig: Parameters<typeof seed>[0];
}

async function runServer(
  name: string,
  script: string,
  env: Record<string, string>,
  f: Fixtures,
  extra: typeof scenarios = [],
  pairList: typeof pairs = [],
) {
  checkInterrupted();
  log(`${name}: starting`);
  const child: Child = await startServerProcess(name, script, env);
  const stop = onCleanup(() => child.stop());
  try {
    log(`${name}: ready on ${child.url} (pid ${child.pid})`);
    const stats: LoadStats[] = [];
    for (const scenario of [...scenarios, ...extra]) {
      checkInterrupted();
      const s = await measure(child.url, scenario, f, {
        seconds: duration,
        warmupSeconds: WARMUP_SECONDS,
        connections: CONNECTIONS,
        repeats,
        pid: child.pid,
      });
      log(
        `${name} ${scenario.name}: ${s.reqPerSec.toFixed(0)} req/s, p50 ${s.p50} ms, p99 ${s.p99} ms, CPU ${s.cpuMsPerRequest.toFixed(2)} ms/req, non-2xx ${s.non2xx}${Object.keys(s.statuses).length ? ` ${JSON.stringify(s.statuses)}` : ''}, errors ${s.errors}`,
      );
      stats.push(s);
    }
    const paired: PairResult[] = [];
    for (const pair of pairList) {
      checkInterrupted();
      const { without, with: withCustom } = await measurePair(child.url, pair, f, {
        seconds: duration,
        warmupSeconds: WARMUP_SECONDS,
        connections: CONNECTIONS,
        repeats,
        pid: child.pid,
      });
      const r = pairResult(pair.name, without, withCustom);
      const line = (s: LoadStats) =>
        `${s.reqPerSec.toFixed(0)} req/s, p50 ${s.p50} ms, p99 ${s.p99} ms, CPU ${s.cpuMsPerRequest.toFixed(2)} ms/req, non-2xx ${s.non2xx}${Object.keys(s.statuses).length ? ` ${JSON.stringify(s.statuses)}` : ''}, errors ${s.errors}`;
      log(
        `${name} ${pair.name}: without ${line(without)}; with ${line(withCustom)}; time ${r.timeRatio.toFixed(2)}×, CPU ${r.cpuRatio.toFixed(2)}×`,
      );
      paired.push(r);
    }
    checkInterrupted();
    const memory = memoryOf(child.pid);
    const failed =
      stats.some((s) => s.non2xx > 0) || paired.some((p) => p.without.non2xx + p.with.non2xx > 0);
    if (failed) log(`${name}: last output lines:\n${child.output() || '(none)'}`);
    return {
      stats: stats.slice(0, scenarios.length),
      extra: stats.slice(scenarios.length),
      paired,
      memory,
    };
  } finally {
    await stop();
  }
}

async function benchDatabase(t: Target): Promise<DatabaseReport> {
  checkInterrupted();
  // The custom pairs' twins: of the read organization (GET) and of the write one (POST).
  const customOrgs = pairs.length > 0 ? ORGS : 0;
  log(
    `${t.label}: seeding ${ORGS} × ${DEALS_PER_ORG} deals${customOrgs ? `, and ${customOrgs} twins with 20 custom fields` : ''}`,
  );
  const seeded = await seed(t.seedConfig, { orgs: ORGS, dealsPerOrg: DEALS_PER_ORG, customOrgs });
  log(`${t.label}: seeded in ${seeded.seconds.toFixed(1)} s; search terms: ${seeded.searchTerms.join(' ')}`);
  const [readOrg, writeOrg] = seeded.orgs;
  if (!readOrg || !writeOrg) throw new Error('seeding produced fewer than 2 organizations');
  const fixtures: Fixtures = {
    readKey: readOrg.apiKey,
    writeKey: writeOrg.apiKey,
    dealIds: seeded.dealIds,
    searchTerms: seeded.searchTerms,
    customReadKey: seeded.customOrgs[0]?.apiKey,
    customWriteKey: seeded.customOrgs[1]?.apiKey,
  };
  // One after the other: on the embedded database only one process may have the data dir open.
  const service = await runServer(
    'service',
    SERVER_SCRIPT,
    { ...UNTHROTTLED, ...t.serviceEnv },
    fixtures,
    serviceOnly,
    pairs,
  );
  // The baseline has nothing to do when only the service's own scenarios (MCP, the custom pairs) are asked for.
  const baseline =
    scenarios.length > 0 ? await runServer('baseline', BASELINE_SCRIPT, t.baselineEnv, fixtures) : undefined;
  const results: ScenarioResult[] = scenarios.map((s, i) => {
    const sv = service.stats[i];
    const bl = baseline?.stats[i];
    if (!sv || !bl) throw new Error(`missing result for ${s.name}`);
    return scenarioResult(s.name, sv, bl);
  });
  const mcp = service.extra[0];
  const rest = service.stats[scenarios.findIndex((s) => s.name === 'GET /deals')];
  return {
    database: t.label,
    seed: {
      organizations: ORGS,
      dealsPerOrg: DEALS_PER_ORG,
      seconds: seeded.seconds,
      ...(customOrgs ? { customOrganizations: customOrgs } : {}),
    },
    scenarios: results,
    ...(service.paired.length ? { customFields: service.paired } : {}),
    memory: { service: service.memory, baseline: baseline?.memory },
    ...(mcp ? { mcp: { stats: mcp, restCpuMsPerRequest: rest?.cpuMsPerRequest ?? Number.NaN } } : {}),
  };
}

async function embedded(): Promise<DatabaseReport> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'crm-bench-'));
  const remove = onCleanup(async () => rmSync(dir, { recursive: true, force: true }));
  try {
    return await benchDatabase({
      label: 'Embedded (PGlite)',
      seedConfig: { kind: 'pglite', dataDir: dir },
      serviceEnv: { CRM_DATA_DIR: dir, DATABASE_URL: '' },
      baselineEnv: { BASELINE_DATA_DIR: dir, BASELINE_DATABASE_URL: '' },
    });
  } finally {
    await remove();
  }
}

const LOCAL_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

async function postgres(): Promise<DatabaseReport> {
  const label = 'PostgreSQL';
  let admin: URL;
  try {
    admin = new URL(ADMIN_URL);
  } catch {
    return { database: label, skipped: 'the admin URL is not a valid URL', scenarios: [], memory: {} };
  }
  if (!LOCAL_HOSTS.has(admin.hostname))
    return {
      database: label,
      skipped: `${admin.hostname} is not 127.0.0.1: the bench only targets this machine`,
      scenarios: [],
      memory: {},
    };
  const adminClient = async () => {
    const client = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 5_000 });
    await client.connect();
    return client;
  };
  const name = `crm_bench_${randomBytes(5).toString('hex')}`;
  try {
    const client = await adminClient();
    try {
      const [row] = (await client.query<{ server_version: string }>('show server_version')).rows;
      log(`PostgreSQL ${row?.server_version ?? '?'} at ${admin.host}: creating database ${name}`);
      await client.query(`create database ${name}`);
    } finally {
      await client.end();
    }
  } catch (err) {
    const reason = `PostgreSQL at ${admin.host} is unreachable or refused: ${(err as Error).message}`;
    log(`skipping the PostgreSQL half: ${reason}`);
    return { database: label, skipped: reason, scenarios: [], memory: {} };
  }
  const drop = onCleanup(async () => {
    const client = await adminClient();
    try {
      await client.query(`drop database if exists ${name} with (force)`);
      log(`dropped database ${name}`);
    } finally {
      await client.end();
    }
  });
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  try {
    return await benchDatabase({
      label,
      seedConfig: {
        kind: 'postgresql',
        url: url.toString(),
        poolMax: 4,
        connectTimeoutMs: 10_000,
        queryTimeoutMs: 600_000,
      },
      serviceEnv: { DATABASE_URL: url.toString() },
      baselineEnv: { BASELINE_DATABASE_URL: url.toString(), BASELINE_DATA_DIR: '' },
    });
  } finally {
    await drop();
  }
}

// ---- main ----------------------------------------------------------------------------------------

function commandLine(): string {
  const env = [
    'BENCH_DURATION',
    'BENCH_REPEAT',
    'BENCH_ONLY',
    'BENCH_DATABASES',
    'BENCH_DATABASE_URL',
    'TEST_DATABASE_URL',
  ]
    .filter((k) => process.env[k])
    .map((k) => {
      const v = process.env[k] ?? '';
      return `${k}=${v.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@')}`;
    });
  const cmd =
    process.env.npm_lifecycle_event === 'bench'
      ? 'npm run bench'
      : `node ${path.relative(process.cwd(), process.argv[1] ?? 'apps/bench/src/main.ts')}`;
  return [...env, cmd].join(' ');
}

const started = Date.now();
const report: BenchReport = {
  date: new Date().toISOString(),
  command: commandLine(),
  node: process.version,
  cpus: `${os.availableParallelism()} × ${os.cpus()[0]?.model.trim() ?? 'unknown CPU'}`,
  durationSeconds: duration,
  repeats,
  warmupSeconds: WARMUP_SECONDS,
  connections: CONNECTIONS,
  databases: [],
};
log(`${report.command} — ${report.date}`);

for (const [label, half] of [
  ['Embedded (PGlite)', databases.includes('pglite') ? embedded : undefined],
  ['PostgreSQL', databases.includes('postgresql') ? postgres : undefined],
] as const) {
  if (!half) continue;
  try {
    report.databases.push(await half());
  } catch (err) {
    if (err instanceof Interrupted || interrupted) await new Promise(() => undefined); // the signal handler exits
    log(`${label} failed: ${(err as Error).stack ?? String(err)}`);
    await cleanupAll();
    report.databases.push({
      database: label,
      skipped: `failed: ${(err as Error).message}`,
      scenarios: [],
      memory: {},
    });
  }
}

// A focused run must not pass for the full picture: it goes beside latest.*, not over it.
const focused = only !== undefined || listEnv('BENCH_DATABASES') !== undefined;
const written = writeResults(RESULTS_DIR, report, focused ? 'focused' : 'latest');
process.stdout.write(`\n${formatText(report)}\n`);
log(
  `wrote ${path.relative(process.cwd(), written.json)} and ${path.relative(process.cwd(), written.md)} in ${((Date.now() - started) / 1000).toFixed(0)} s`,
);
process.exit(0);
