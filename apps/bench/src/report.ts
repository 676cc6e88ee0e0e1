import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { LoadStats } from './load.ts';
import type { Memory } from './processes.ts';

export interface ScenarioResult {
  scenario: string;
  service: LoadStats;
  baseline: LoadStats;
  /** service req/s ÷ baseline req/s. */
  ratio: number;
  /** service p99 ÷ baseline p99. */
  p99Ratio: number;
  /** service CPU per request ÷ baseline CPU per request (lower is better for the service). */
  cpuRatio: number;
}

/** A pair of the service's own scenarios measured in turns: what custom fields cost (issue 29). */
export interface PairResult {
  scenario: string;
  without: LoadStats;
  with: LoadStats;
  /** Time per request, with ÷ without: the inverse of the req/s ratio (the load is closed: 50 connections). */
  timeRatio: number;
  /** p50 with ÷ p50 without. */
  p50Ratio: number;
  /** CPU per request with ÷ without. */
  cpuRatio: number;
}

/** What issue 29 allows the custom fields: this much of the CPU and the time of the same calls without. */
export const CUSTOM_TARGET = 1.2;

export function pairResult(scenario: string, without: LoadStats, withCustom: LoadStats): PairResult {
  return {
    scenario,
    without,
    with: withCustom,
    timeRatio: withCustom.reqPerSec > 0 ? without.reqPerSec / withCustom.reqPerSec : Number.NaN,
    p50Ratio: without.p50 > 0 ? withCustom.p50 / without.p50 : Number.NaN,
    cpuRatio: without.cpuMsPerRequest > 0 ? withCustom.cpuMsPerRequest / without.cpuMsPerRequest : Number.NaN,
  };
}

export interface DatabaseReport {
  database: string;
  /** Set when this half did not run, with the reason. */
  skipped?: string;
  seed?: { organizations: number; dealsPerOrg: number; seconds: number; customOrganizations?: number };
  scenarios: ScenarioResult[];
  /** The service with custom fields against without, measured in turns (the custom pairs). */
  customFields?: PairResult[];
  memory: { service?: Memory; baseline?: Memory };
  /** deals-list through MCP, beside the CPU per request of the service's own GET /deals. */
  mcp?: { stats: LoadStats; restCpuMsPerRequest: number };
}

/** The MCP door's line: its cost set against the same work over REST, in the same run. */
function mcpLine(db: DatabaseReport): string[] {
  if (!db.mcp) return [];
  const { stats: s, restCpuMsPerRequest: rest } = db.mcp;
  const ratio = rest > 0 ? s.cpuMsPerRequest / rest : Number.NaN;
  return [
    `MCP tools/call deals-list (limit 50): ${s.reqPerSec.toFixed(0)} req/s, p50 ${s.p50} ms, p99 ${s.p99} ms, ` +
      `CPU ${s.cpuMsPerRequest.toFixed(2)} ms/req = ${Number.isNaN(ratio) ? 'n/a' : ratio.toFixed(2)}× the service's GET /deals ` +
      `(${rest.toFixed(2)} ms/req; target ≤ 1.2×), non-2xx ${s.non2xx}`,
  ];
}

export interface BenchReport {
  date: string;
  command: string;
  node: string;
  cpus: string;
  durationSeconds: number;
  repeats: number;
  warmupSeconds: number;
  connections: number;
  databases: DatabaseReport[];
}

export function scenarioResult(scenario: string, service: LoadStats, baseline: LoadStats): ScenarioResult {
  return {
    scenario,
    service,
    baseline,
    ratio: baseline.reqPerSec > 0 ? service.reqPerSec / baseline.reqPerSec : Number.NaN,
    p99Ratio: baseline.p99 > 0 ? service.p99 / baseline.p99 : Number.NaN,
    cpuRatio: baseline.cpuMsPerRequest > 0 ? service.cpuMsPerRequest / baseline.cpuMsPerRequest : Number.NaN,
  };
}

const HEAD = [
  'scenario',
  'svc req/s',
  'svc p50',
  'svc p99',
  'svc non-2xx',
  'base req/s',
  'base p50',
  'base p99',
  'base non-2xx',
  'req/s ratio',
  'p99 ratio',
  'svc CPU/req',
  'base CPU/req',
  'CPU ratio',
];

const fixed = (n: number, digits: number) => (Number.isFinite(n) ? n.toFixed(digits) : '–');
const ms = (n: number) => (Number.isFinite(n) ? `${fixed(n, n >= 100 ? 0 : 1)} ms` : '–');
const cpuMs = (n: number) => (Number.isFinite(n) ? `${fixed(n, 2)} ms` : '–');
const failures = (s: LoadStats) => {
  const codes = Object.entries(s.statuses).map(([code, count]) => `${code}×${count}`);
  const other = s.errors - s.timeouts;
  const errors = [
    ...(s.timeouts > 0 ? [`${s.timeouts} timeouts`] : []),
    ...(other > 0 ? [`${other} conn errors`] : []),
  ];
  const detail = [...codes, ...errors].join(', ');
  return detail && s.non2xx + s.errors > 0 ? `${s.non2xx} (${detail})` : String(s.non2xx);
};

function rows(db: DatabaseReport): string[][] {
  return db.scenarios.map((r) => [
    r.scenario,
    fixed(r.service.reqPerSec, 0),
    ms(r.service.p50),
    ms(r.service.p99),
    failures(r.service),
    fixed(r.baseline.reqPerSec, 0),
    ms(r.baseline.p50),
    ms(r.baseline.p99),
    failures(r.baseline),
    Number.isFinite(r.ratio) ? `${fixed(r.ratio, 2)}×` : '–',
    Number.isFinite(r.p99Ratio) ? `${fixed(r.p99Ratio, 2)}×` : '–',
    cpuMs(r.service.cpuMsPerRequest),
    cpuMs(r.baseline.cpuMsPerRequest),
    Number.isFinite(r.cpuRatio) ? `${fixed(r.cpuRatio, 2)}×` : '–',
  ]);
}

const PAIR_HEAD = [
  'pair (service only)',
  'req/s',
  '+custom req/s',
  'p50',
  '+custom p50',
  'p99',
  '+custom p99',
  'CPU/req',
  '+custom CPU/req',
  'non-2xx',
  '+custom non-2xx',
  'time ratio',
  'p50 ratio',
  'CPU ratio',
];

const ratioCell = (n: number) =>
  Number.isFinite(n) ? `${fixed(n, 2)}×${n > CUSTOM_TARGET ? ' (over)' : ''}` : '–';

function pairRows(db: DatabaseReport): string[][] {
  return (db.customFields ?? []).map((r) => [
    r.scenario,
    fixed(r.without.reqPerSec, 0),
    fixed(r.with.reqPerSec, 0),
    ms(r.without.p50),
    ms(r.with.p50),
    ms(r.without.p99),
    ms(r.with.p99),
    cpuMs(r.without.cpuMsPerRequest),
    cpuMs(r.with.cpuMsPerRequest),
    failures(r.without),
    failures(r.with),
    ratioCell(r.timeRatio),
    ratioCell(r.p50Ratio),
    ratioCell(r.cpuRatio),
  ]);
}

const pairNote =
  `Custom fields (issue 29): each pair's two sides measured in turns against the same service, the plain calls ` +
  `on the organization without custom fields, "+custom" on its twin with 20 (every deal listed holds 20 values; ` +
  `every create sets all 20, a unique one among them). Ratios are +custom ÷ plain (time: plain req/s ÷ +custom ` +
  `req/s); target ≤ ${CUSTOM_TARGET}×, "(over)" marks a miss.`;

const mem = (m: Memory | undefined) =>
  m ? `${m.rssMb.toFixed(0)} MiB (peak ${m.peakMb.toFixed(0)} MiB)` : 'n/a';
const memoryLine = (db: DatabaseReport) =>
  `Server RSS after the run: service ${mem(db.memory.service)}, baseline ${mem(db.memory.baseline)}`;
const seedLine = (db: DatabaseReport) =>
  db.seed
    ? `Seeded ${db.seed.organizations} organizations × ${db.seed.dealsPerOrg} deals (2 contacts and 1 activity each)${db.seed.customOrganizations ? `, and ${db.seed.customOrganizations} twins of theirs with 20 custom fields on deals,` : ''} in ${db.seed.seconds.toFixed(1)} s`
    : '';

function textTable(head: string[], body: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

function markdownTable(head: string[], body: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [
    line(head),
    `|${head.map((_, i) => (i === 0 ? ' --- ' : ' ---: ')).join('|')}|`,
    ...body.map(line),
  ].join('\n');
}

const preamble = (r: BenchReport) => [
  `Date: ${r.date}`,
  `Command: ${r.command}`,
  `Node ${r.node} on ${r.cpus}; ${r.connections} connections; per scenario a ${r.warmupSeconds} s warm-up, then ${r.repeats} runs of ${r.durationSeconds} s: figures are the medians of the runs`,
];

export function formatText(r: BenchReport): string {
  const out = [...preamble(r), ''];
  for (const db of r.databases) {
    out.push(`== ${db.database} ==`);
    if (db.skipped) {
      out.push(`skipped: ${db.skipped}`, '');
      continue;
    }
    out.push(seedLine(db));
    if (db.scenarios.length > 0) out.push(textTable(HEAD, rows(db)));
    if (db.customFields?.length) out.push('', pairNote, textTable(PAIR_HEAD, pairRows(db)), '');
    out.push(memoryLine(db), ...mcpLine(db), '');
  }
  return out.join('\n');
}

export function formatMarkdown(r: BenchReport): string {
  const out = [
    '# Benchmark: service vs. plain node:http + SQL baseline',
    '',
    ...preamble(r).map((l) => `${l}  `),
    '',
    'Latencies are p50/p99 in ms; ratios are service ÷ baseline (req/s: higher is better for the service; p99 and CPU: lower is). ' +
      'CPU/req is the server process’s own CPU time (user + system) per response: on a shared machine it is steadier than req/s, and it leaves out the database’s share. ' +
      'The non-2xx columns also list requests that timed out (no answer within 10 s) or failed to connect.',
    '',
  ];
  for (const db of r.databases) {
    out.push(`## ${db.database}`, '');
    if (db.skipped) {
      out.push(`Skipped: ${db.skipped}`, '');
      continue;
    }
    out.push(seedLine(db), '');
    if (db.scenarios.length > 0) out.push(markdownTable(HEAD, rows(db)), '');
    if (db.customFields?.length) out.push(pairNote, '', markdownTable(PAIR_HEAD, pairRows(db)), '');
    out.push(memoryLine(db), '', ...mcpLine(db), '');
  }
  return out.join('\n');
}

export function writeResults(dir: string, r: BenchReport, name: string): { json: string; md: string } {
  mkdirSync(dir, { recursive: true });
  const json = path.join(dir, `${name}.json`);
  const md = path.join(dir, `${name}.md`);
  writeFileSync(json, `${JSON.stringify(r, null, 2)}\n`);
  writeFileSync(md, formatMarkdown(r));
  return { json, md };
}
