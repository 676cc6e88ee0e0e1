/**
 * What a piece of the database's upkeep costs a write: POST /deals and PATCH /deals/{id}, one request at a
 * time, and a `crm import` of AB_IMPORT deals (a new organization each time), on one server and one
 * PostgreSQL database, in interleaved rounds with that piece on and off: the same code, its work the only
 * difference. Prints each round and the medians' ratio. 127.0.0.1 only.
 * - AB_WHAT=sync (default): the sync triggers on deals (issue 31, docs/api/sync.md), disabled by
 *   `alter table … disable trigger`;
 * - AB_WHAT=search: the indexes search added (issue 33: the prefix btrees and the words GIN indexes of
 *   deals and contacts, docs/development.md), dropped and built again; AB_INDEXES (comma-separated
 *   names) measures those instead (`AB_INDEXES=deals_search_text`);
 * - AB_WHAT=pending: every GIN index's pending list held to AB_PENDING kB (default 256, what the
 *   migration sets) against PostgreSQL's default 4 MB (`gin_pending_list_limit`, set and reset).
 *
 *   AB_WHAT=search node apps/bench/src/write-ab.ts   # AB_ROUNDS (3), AB_SECONDS (4), AB_IMPORT (20000; 0: none), TEST_DATABASE_URL
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { crmCli } from './crm-calls.ts';
import { startServerProcess, UNTHROTTLED } from './processes.ts';
import { writeDeals } from './scale-data.ts';
import { measureSequential } from './sequential.ts';

const ROUNDS = Number(process.env.AB_ROUNDS ?? 3);
const SECONDS = Number(process.env.AB_SECONDS ?? 4);
const ADMIN_URL =
  process.env.BENCH_DATABASE_URL ||
  process.env.TEST_DATABASE_URL ||
  'postgres://postgres@127.0.0.1:5432/postgres';
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const API = '/api/v1/crm';
const IMPORT = Number(process.env.AB_IMPORT ?? 20_000);
const WHAT = process.env.AB_WHAT ?? 'sync';
const SYNC_TRIGGERS = ['deals_sync_insert', 'deals_sync_update', 'deals_sync_delete'];
const SEARCH_INDEXES = process.env.AB_INDEXES?.split(',') ?? [
  'deals_title_prefix',
  'deals_company_prefix',
  'contacts_name_prefix',
  'deals_search_words',
  'contacts_search_words',
];
const PENDING_KB = Number(process.env.AB_PENDING ?? 256);
if (!['sync', 'search', 'pending'].includes(WHAT)) throw new Error('AB_WHAT is sync, search or pending');

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

const name = `crm_syncab_${randomBytes(4).toString('hex')}`;
const admin = new pg.Client({ connectionString: ADMIN_URL });
await admin.connect();
await admin.query(`create database ${name}`);
const url = new URL(ADMIN_URL);
url.pathname = `/${name}`;
const dbEnv = { DATABASE_URL: url.toString(), CRM_DATA_DIR: '', LOG_LEVEL: 'warn' };
const db = new pg.Client({ connectionString: url.toString() });
const dir = mkdtempSync(path.join(os.tmpdir(), 'crm-write-ab-'));
try {
  const created = spawnSync(
    process.execPath,
    [path.join(ROOT, 'apps/cli/src/main.ts'), 'org', 'create', 'AB'],
    {
      env: { ...process.env, ...dbEnv },
      encoding: 'utf8',
    },
  );
  const { api_key: key } = JSON.parse(created.stdout.trim().split('\n')[0] as string) as { api_key: string };
  const server = await startServerProcess('service', path.join(ROOT, 'apps/server/src/main.ts'), {
    ...UNTHROTTLED,
    ...dbEnv,
  });
  await db.connect();
  // The piece switched: its definitions kept to build it again.
  const indexes = new Map<string, string>();
  if (WHAT === 'search')
    for (const row of (
      await db.query<{ indexname: string; indexdef: string }>(
        'select indexname, indexdef from pg_indexes where indexname = any($1)',
        [SEARCH_INDEXES],
      )
    ).rows)
      indexes.set(row.indexname, row.indexdef);
  const ginIndexes =
    WHAT === 'pending'
      ? (
          await db.query<{ indexname: string }>(
            `select indexname from pg_indexes where schemaname = 'public' and indexdef like '% USING gin %'`,
          )
        ).rows.map((r) => r.indexname)
      : [];
  if (WHAT === 'search' && indexes.size !== SEARCH_INDEXES.length)
    throw new Error(`search indexes not found: ${SEARCH_INDEXES.filter((i) => !indexes.has(i)).join(', ')}`);
  const turn = async (state: 'on' | 'off') => {
    if (WHAT === 'sync')
      for (const t of SYNC_TRIGGERS)
        await db.query(`alter table deals ${state === 'on' ? 'enable' : 'disable'} trigger ${t}`);
    else if (WHAT === 'pending')
      for (const index of ginIndexes)
        await db.query(
          state === 'on'
            ? `alter index ${index} set (gin_pending_list_limit = ${PENDING_KB})`
            : `alter index ${index} reset (gin_pending_list_limit)`,
        );
    else
      for (const [index, definition] of indexes)
        await db.query(
          state === 'on'
            ? `${definition.replace(/^CREATE INDEX /, 'CREATE INDEX IF NOT EXISTS ')}`
            : `drop index if exists ${index}`,
        );
  };
  const file = path.join(dir, 'deals.ndjson');
  if (IMPORT > 0) await writeDeals(file, IMPORT, 'common');
  try {
    const ids: string[] = [];
    let n = 0;
    const post = () => ({
      method: 'POST',
      path: `${API}/deals`,
      body: JSON.stringify({ title: `AB ${n++}`, company_name: 'Acme', value: 1000 + n }),
    });
    // Deals to change: made first, through the API.
    for (let i = 0; i < 200; i++) {
      const res = await fetch(`${server.url}${API}/deals`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: post().body,
      });
      ids.push(((await res.json()) as { data: { id: string } }).data.id);
    }
    const patch = () => ({
      method: 'PATCH',
      path: `${API}/deals/${ids[n % ids.length]}`,
      body: JSON.stringify({ value: 2000 + (n++ % 1000), notes: `ab note ${n}` }),
    });
    const results: Record<string, Record<'on' | 'off', number[]>> = {
      'POST /deals': { on: [], off: [] },
      'PATCH /deals/{id}': { on: [], off: [] },
      ...(IMPORT > 0 && { [`crm import of ${IMPORT} deals (s)`]: { on: [], off: [] } }),
    };
    for (let round = 0; round < ROUNDS; round++)
      for (const state of round % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const)) {
        await turn(state);
        if (IMPORT > 0) {
          const org = spawnSync(
            process.execPath,
            [path.join(ROOT, 'apps/cli/src/main.ts'), 'org', 'create', `AB import ${round} ${state}`],
            { env: { ...process.env, ...dbEnv }, encoding: 'utf8' },
          );
          const { org_id } = JSON.parse(org.stdout.trim().split('\n')[0] as string) as { org_id: string };
          const { seconds } = await crmCli(dbEnv, 'import', file, '--org', org_id);
          (results[`crm import of ${IMPORT} deals (s)`] as Record<'on' | 'off', number[]>)[state].push(
            seconds,
          );
          process.stdout.write(
            `round ${round + 1} ${WHAT} ${state}: crm import of ${IMPORT} deals ${seconds.toFixed(1)} s\n`,
          );
        }
        for (const [call, next] of [
          ['POST /deals', post],
          ['PATCH /deals/{id}', patch],
        ] as const) {
          const stats = await measureSequential(server.url, key, next, {
            seconds: SECONDS,
            warmupSeconds: 1,
          });
          (results[call] as Record<'on' | 'off', number[]>)[state].push(stats.mean);
          process.stdout.write(
            `round ${round + 1} ${WHAT} ${state}: ${call} mean ${stats.mean.toFixed(2)} ms, p50 ${stats.p50.toFixed(2)} ms${stats.non2xx ? ` non-2xx ${JSON.stringify(stats.statuses)}` : ''}\n`,
          );
        }
      }
    for (const [call, { on, off }] of Object.entries(results))
      process.stdout.write(
        `${call}: median of means ${median(on).toFixed(2)} with the ${WHAT} piece, ${median(off).toFixed(2)} without: ${(median(on) / median(off)).toFixed(2)}×\n`,
      );
  } finally {
    await turn('on');
    await server.stop();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
  await db.end().catch(() => {});
  await admin.query(`drop database if exists ${name} with (force)`);
  await admin.end();
}
