import { randomBytes } from 'node:crypto';
import { API_BASE_PATH } from '@crm/config';
import autocannon from 'autocannon';
import { CUSTOM_FIELDS, customValuesOf } from './custom-fields.ts';
import { cpuMsOf } from './processes.ts';

export const API = API_BASE_PATH;

export interface LoadStats {
  /** Responses per second over the measured run. */
  reqPerSec: number;
  p50: number;
  p99: number;
  /** Mean latency in ms (autocannon's percentiles are whole milliseconds; the mean is not). */
  mean: number;
  total: number;
  non2xx: number;
  /** Connection errors, timeouts included. */
  errors: number;
  /** Requests without an answer within 10 s. */
  timeouts: number;
  /** Status code -> count, for the non-2xx ones. */
  statuses: Record<string, number>;
  /** The server process's CPU time per response, in ms (median of the runs); NaN where unknown. */
  cpuMsPerRequest: number;
}

export interface Fixtures {
  /** Key of the organization the read scenarios query. */
  readKey: string;
  /** Key of the organization POST /deals writes into, so writes never change what the reads see. */
  writeKey: string;
  dealIds: string[];
  searchTerms: string[];
  /** The twins of readKey's and writeKey's organizations with 20 custom fields on deals (custom pairs only). */
  customReadKey?: string;
  customWriteKey?: string;
}

export interface Scenario {
  name: string;
  key(f: Fixtures): string;
  requests(f: Fixtures): autocannon.Request[];
  /** Headers beside the key and the JSON content type. */
  headers?: Record<string, string>;
}

const COMPANIES = ['Acme', 'Globex', 'Initech', 'Hooli', 'Vandelay', 'Contoso', 'Northwind', 'Zenith'];

/** A request whose setupRequest rewrites it each time from a counter shared by all connections. */
function rotating(make: (n: number) => Partial<autocannon.Request>): autocannon.Request[] {
  let n = 0;
  return [{ setupRequest: (req) => Object.assign(req, make(n++)) }];
}

const GET_DEALS: Scenario = {
  name: 'GET /deals',
  key: (f) => f.readKey,
  requests: () => [{ method: 'GET', path: `${API}/deals?limit=50` }],
};

/** A deal to create: the n-th of the run. */
const dealBody = (n: number) => ({
  title: `Bench deal ${n}`,
  company_name: `${COMPANIES[n % COMPANIES.length]} ${n % 97}`,
  value: 1000 + ((n * 7919) % 90000),
});

const POST_DEALS: Scenario = {
  name: 'POST /deals',
  key: (f) => f.writeKey,
  requests: () =>
    rotating((n) => ({ method: 'POST', path: `${API}/deals`, body: JSON.stringify(dealBody(n)) })),
};

export const SCENARIOS: Scenario[] = [
  GET_DEALS,
  {
    name: 'GET /deals/{id}',
    key: (f) => f.readKey,
    requests: (f) =>
      rotating((n) => ({ method: 'GET', path: `${API}/deals/${f.dealIds[n % f.dealIds.length]}` })),
  },
  {
    name: 'GET /search',
    key: (f) => f.readKey,
    requests: (f) =>
      rotating((n) => ({
        method: 'GET',
        path: `${API}/search?q=${encodeURIComponent(f.searchTerms[n % f.searchTerms.length] ?? 'ac')}`,
      })),
  },
  POST_DEALS,
  {
    // A value and a close date changed on the read organization's deals (its key writes too; the GET
    // scenarios run before this one): the write a field's history is kept for.
    name: 'PATCH /deals/{id}',
    key: (f) => f.readKey,
    requests: (f) =>
      rotating((n) => ({
        method: 'PATCH',
        path: `${API}/deals/${f.dealIds[n % f.dealIds.length]}`,
        body: JSON.stringify({
          value: 1000 + n,
          expected_close_date: new Date(Date.UTC(2027, 0, 1) + (n % 365) * 86_400_000).toISOString(),
        }),
      })),
  },
];

/** Two scenarios measured in turns against one server: the second's cost over the first's is the figure. */
export interface ScenarioPair {
  name: string;
  without: Scenario;
  with: Scenario;
}

const requireKey = (key: string | undefined) => {
  if (!key) throw new Error('no organization with custom fields was seeded');
  return key;
};

/**
 * The unique field's values: never sent twice by this process (the counter outlives the runs), nor by
 * another bench (the tag), nor by the seed (which writes SEED-…).
 */
const runTag = randomBytes(4).toString('hex');
let created = 0;

/**
 * Issue 29: POST and GET /deals with 20 custom fields set against the same calls without (at most 1.2× the
 * CPU and time). The service only; each pair's two sides are organizations seeded alike, one of them with
 * the fields (`seed`'s custom twins).
 */
export const CUSTOM_PAIRS: ScenarioPair[] = [
  {
    name: `GET /deals + ${CUSTOM_FIELDS.length} custom`,
    without: GET_DEALS,
    with: {
      name: `GET /deals + ${CUSTOM_FIELDS.length} custom`,
      key: (f) => requireKey(f.customReadKey),
      requests: GET_DEALS.requests,
    },
  },
  {
    name: `POST /deals + ${CUSTOM_FIELDS.length} custom`,
    without: POST_DEALS,
    with: {
      name: `POST /deals + ${CUSTOM_FIELDS.length} custom`,
      key: (f) => requireKey(f.customWriteKey),
      requests: () =>
        rotating((n) => ({
          method: 'POST',
          path: `${API}/deals`,
          body: JSON.stringify({
            ...dealBody(n),
            custom: customValuesOf(n, `BENCH-${runTag}-${created++}`),
          }),
        })),
    },
  },
];

/**
 * GET /deals's work through the MCP door: a stateless Streamable HTTP POST with one tools/call of
 * deals-list. The service only (the baseline has no MCP); its CPU per call is set beside the service's
 * own GET /deals.
 */
export const MCP_SCENARIO: Scenario = {
  name: 'MCP deals-list',
  key: (f) => f.readKey,
  headers: { accept: 'application/json, text/event-stream' },
  requests: () => [
    {
      method: 'POST',
      path: '/mcp',
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'deals-list', arguments: { limit: 50 } },
      }),
    },
  ],
};

let current: autocannon.Instance | undefined;

/** Stops the run in progress (Ctrl+C); its promise then resolves with what it measured so far. */
export function stopCurrentLoad(): void {
  current?.stop();
}

function runOnce(url: string, scenario: Scenario, f: Fixtures, seconds: number, connections: number) {
  return new Promise<autocannon.Result>((resolve, reject) => {
    current = autocannon(
      {
        url,
        connections,
        duration: seconds,
        timeout: 10,
        headers: {
          authorization: `Bearer ${scenario.key(f)}`,
          'content-type': 'application/json',
          ...scenario.headers,
        },
        requests: scenario.requests(f),
      },
      (err: unknown, result: autocannon.Result) => {
        current = undefined;
        if (err) reject(err);
        else resolve(result);
      },
    );
  });
}

/**
 * Waits until the server has worked off what the last run left in flight: autocannon stops sending when
 * its time is up, but the server still answers the requests it has queued (PGlite runs one query at a
 * time, so that can take seconds). Both servers' /readyz go through the database queue, so a fast
 * answer means the backlog is gone. Bounded: gives up after 60 s.
 */
async function drain(url: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const t0 = performance.now();
    try {
      const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(30_000) });
      await res.body?.cancel();
      if (res.ok && performance.now() - t0 < 50) return;
    } catch {
      // slow or refused: try again
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

const median = (values: number[]): number => {
  const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};

interface MeasureOptions {
  seconds: number;
  warmupSeconds: number;
  connections: number;
  repeats: number;
  pid?: number;
}

/** One measured run, then the drain; with the server's CPU time per response over both (NaN if unknown). */
async function measuredRun(
  url: string,
  scenario: Scenario,
  f: Fixtures,
  opts: MeasureOptions,
): Promise<{ run: autocannon.Result; cpuPerRequest: number }> {
  const cpu = () => (opts.pid === undefined ? undefined : cpuMsOf(opts.pid));
  const before = cpu();
  const run = await runOnce(url, scenario, f, opts.seconds, opts.connections);
  // The drain's few /readyz calls are counted too; against thousands of requests they do not show.
  await drain(url);
  const after = cpu();
  return {
    run,
    cpuPerRequest:
      before !== undefined && after !== undefined && run.requests.total > 0
        ? (after - before) / run.requests.total
        : Number.NaN,
  };
}

async function warmUp(url: string, scenario: Scenario, f: Fixtures, opts: MeasureOptions) {
  if (opts.warmupSeconds <= 0) return;
  await runOnce(url, scenario, f, opts.warmupSeconds, opts.connections);
  await drain(url);
}

/** The medians of the runs (req/s, latencies, CPU per response) and their summed counts. */
function summary(measured: { run: autocannon.Result; cpuPerRequest: number }[]): LoadStats {
  const runs = measured.map((m) => m.run);
  const statuses: Record<string, number> = {};
  for (const r of runs)
    for (const [code, stat] of Object.entries(r.statusCodeStats ?? {})) {
      if (!code.startsWith('2') && stat.count) statuses[code] = (statuses[code] ?? 0) + stat.count;
    }
  const sum = (pick: (r: (typeof runs)[number]) => number) => runs.reduce((acc, r) => acc + pick(r), 0);
  return {
    // Completed responses over the measured time; autocannon's per-second average rounds short runs badly.
    reqPerSec: median(runs.map((r) => (r.duration > 0 ? r.requests.total / r.duration : 0))),
    // No response at all inside a window: there is no latency to show, not a 0 ms one.
    p50: median(runs.map((r) => (r.requests.total > 0 ? r.latency.p50 : Number.NaN))),
    p99: median(runs.map((r) => (r.requests.total > 0 ? r.latency.p99 : Number.NaN))),
    mean: median(runs.map((r) => (r.requests.total > 0 ? r.latency.mean : Number.NaN))),
    total: sum((r) => r.requests.total),
    non2xx: sum((r) => r.non2xx),
    errors: sum((r) => r.errors),
    timeouts: sum((r) => r.timeouts),
    statuses,
    cpuMsPerRequest: median(measured.map((m) => m.cpuPerRequest)),
  };
}

/**
 * A warm-up run that is thrown away, then `repeats` measured runs, each followed by a drain. The
 * machine is shared and noisy, so req/s, p50 and p99 are the medians of the runs; counts are summed.
 */
export async function measure(
  url: string,
  scenario: Scenario,
  f: Fixtures,
  opts: MeasureOptions,
): Promise<LoadStats> {
  await warmUp(url, scenario, f, opts);
  const measured = [];
  for (let i = 0; i < opts.repeats; i++) measured.push(await measuredRun(url, scenario, f, opts));
  return summary(measured);
}

/**
 * A pair's two sides in turns against one server, so that the machine's other load falls on both alike:
 * a warm-up of each, then `repeats` rounds of one measured run of each, the order swapped every round
 * (A B, B A, A B, …). Each side's figures are the medians of its runs, as `measure`'s.
 */
export async function measurePair(
  url: string,
  pair: ScenarioPair,
  f: Fixtures,
  opts: MeasureOptions,
): Promise<{ without: LoadStats; with: LoadStats }> {
  await warmUp(url, pair.without, f, opts);
  await warmUp(url, pair.with, f, opts);
  const without = [];
  const withCustom = [];
  for (let i = 0; i < opts.repeats; i++) {
    if (i % 2 === 0) {
      without.push(await measuredRun(url, pair.without, f, opts));
      withCustom.push(await measuredRun(url, pair.with, f, opts));
    } else {
      withCustom.push(await measuredRun(url, pair.with, f, opts));
      without.push(await measuredRun(url, pair.without, f, opts));
    }
  }
  return { without: summary(without), with: summary(withCustom) };
}
