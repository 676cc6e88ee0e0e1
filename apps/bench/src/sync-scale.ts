/**
 * `npm run bench:sync`: a sync's calls (docs/api/sync.md) at SYNC_DEALS deals (default 1,000,000) in one
 * organization beside 10,000 in another, on PostgreSQL, the plain first page of GET /deals beside them as
 * the machine's yardstick. The deals are written by SQL (faster than `crm import` at this size; the sync
 * triggers fill `sync_changes` as for any write), placed in the sync order as if two days ago, then 500 of
 * the large organization's (25 of the small one's) changed ten minutes ago and 50 deleted: the mirror's
 * every-hour call reads those. Each call one request at a time (sequential.ts), p50 and mean; the
 * database's own time of the last hour's page by EXPLAIN ANALYZE. 127.0.0.1 only.
 *
 *   SYNC_DEALS=1000000 SYNC_SECONDS=4 TEST_DATABASE_URL=postgres://… npm run bench:sync
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { startServerProcess, UNTHROTTLED } from './processes.ts';
import { measureSequential } from './sequential.ts';

const LARGE = Number(process.env.SYNC_DEALS ?? 1_000_000);
const SMALL = 10_000;
const SECONDS = Number(process.env.SYNC_SECONDS ?? 4);
const ADMIN_URL =
  process.env.BENCH_DATABASE_URL ||
  process.env.TEST_DATABASE_URL ||
  'postgres://postgres@127.0.0.1:5432/postgres';
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const API = '/api/v1/crm';

const log = (msg: string) =>
  process.stdout.write(`[sync ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
const ms = (v: number) => v.toFixed(v < 10 ? 2 : 1);

const name = `crm_syncscale_${randomBytes(4).toString('hex')}`;
const admin = new pg.Client({ connectionString: ADMIN_URL });
await admin.connect();
await admin.query(`create database ${name}`);
const url = new URL(ADMIN_URL);
url.pathname = `/${name}`;
const dbEnv = { DATABASE_URL: url.toString(), CRM_DATA_DIR: '', LOG_LEVEL: 'warn' };
const db = new pg.Client({ connectionString: url.toString() });
try {
  const orgs: Array<{ n: number; id: string; key: string }> = [];
  for (const n of [SMALL, LARGE]) {
    const out = spawnSync(
      process.execPath,
      [path.join(ROOT, 'apps/cli/src/main.ts'), 'org', 'create', `Sync ${n}`],
      {
        env: { ...process.env, ...dbEnv },
        encoding: 'utf8',
      },
    );
    const created = JSON.parse(out.stdout.trim().split('\n')[0] as string) as {
      org_id: string;
      api_key: string;
    };
    orgs.push({ n, id: created.org_id, key: created.api_key });
  }
  await db.connect();
  for (const o of orgs) {
    const t0 = performance.now();
    await db.query(
      `insert into deals (id, org_id, title, pipeline_id, stage_id, created_at, lifecycle_stage, value)
       select gen_random_uuid(), $1, 'Deal ' || g, p.id, s.id, now() - interval '2 days', 'opportunity', g
         from pipelines p
         join lateral (select id from pipeline_stages where pipeline_id = p.id order by position limit 1) s on true
        cross join generate_series(1, $2::int) g
        where p.org_id = $1 and p.is_default`,
      [o.id, o.n],
    );
    log(
      `${o.n.toLocaleString('en-US')} deals written by SQL in ${((performance.now() - t0) / 1000).toFixed(0)} s`,
    );
  }
  // Placed two days ago, as an old import would have been.
  await db.query(`update sync_changes s set position = n.position
      from (select object, id, nextval('sync_changes_position') as position from sync_changes
             where position is null order by changed_at) n
     where s.object = n.object and s.id = n.id`);
  await db.query(
    `insert into sync_marks (position, at) select max(position), now() - interval '2 days' + interval '1 minute' from sync_changes`,
  );
  for (const o of orgs) {
    const changed = o.n === SMALL ? 25 : 500;
    await db.query(
      `update deals set value = value + 1, updated_at = now() - interval '10 minutes'
        where id in (select id from deals where org_id = $1 order by id limit $2)`,
      [o.id, changed],
    );
    await db.query(
      'delete from deals where id in (select id from deals where org_id = $1 order by id desc limit 50)',
      [o.id],
    );
  }
  await db.query('vacuum analyze');
  log('placed, 500 (25) changed and 50 deleted in the last hour; vacuumed');

  const server = await startServerProcess('service', path.join(ROOT, 'apps/server/src/main.ts'), {
    ...UNTHROTTLED,
    ...dbEnv,
  });
  try {
    const hourAgo = new Date(Date.now() - 3_600_000).toISOString();
    const middle = async (o: (typeof orgs)[number]) => {
      const [row] = (
        await db.query(
          `select position from sync_changes where org_id = $1 and object = 'deals' and position is not null
            order by position offset $2 limit 1`,
          [o.id, Math.floor(o.n / 2)],
        )
      ).rows as Array<{ position: string }>;
      return row?.position as string;
    };
    const calls: Array<[string, (o: (typeof orgs)[number]) => Promise<string>]> = [
      ['GET /deals (first page, the yardstick)', async () => '/deals?limit=50'],
      ['GET /deals?updated_since=<an hour ago>', async () => `/deals?limit=50&updated_since=${hourAgo}`],
      [
        'GET /deals?updated_since=<an hour ago>&include_deleted=true',
        async () => `/deals?limit=50&include_deleted=true&updated_since=${hourAgo}`,
      ],
      [
        'GET /deals?updated_since=<epoch>&after=<the middle> (a first sync, half way)',
        async (o) => `/deals?limit=50&updated_since=1970-01-01T00:00:00Z&after=${await middle(o)}`,
      ],
    ];
    const lines = [
      `| call (one at a time) | p50 ${SMALL.toLocaleString('en-US')} | p50 ${LARGE.toLocaleString('en-US')} | mean ${SMALL.toLocaleString('en-US')} → ${LARGE.toLocaleString('en-US')} | ratio (mean) |`,
      '|---|---|---|---|---|',
    ];
    for (const [call, pathOf] of calls) {
      const stats = [];
      for (const o of orgs) {
        const p = `${API}${await pathOf(o)}`;
        stats.push(
          await measureSequential(server.url, o.key, () => ({ path: p }), {
            seconds: SECONDS,
            warmupSeconds: 1,
          }),
        );
      }
      const [s, l] = stats as [(typeof stats)[0], (typeof stats)[0]];
      const line = `| ${call}${s.non2xx + l.non2xx ? ` (non-2xx ${JSON.stringify({ ...s.statuses, ...l.statuses })})` : ''} | ${ms(s.p50)} | ${ms(l.p50)} | ${ms(s.mean)} → ${ms(l.mean)} | ${(l.mean / s.mean).toFixed(2)}× |`;
      log(line);
      lines.push(line);
    }
    // The database's own time of the last hour's page at the large size (the statement a sync sends).
    const large = orgs[1] as (typeof orgs)[number];
    const plan = (
      await db.query(
        `explain (analyze, format json) select sc.position, r.* from sync_changes sc
           left join lateral (select d.*, s.name as stage_name, p.name as pipeline_name from deals d
             left join pipeline_stages s on s.id = d.stage_id left join pipelines p on p.id = d.pipeline_id
             where d.id = sc.id and d.org_id = sc.org_id) r on true
          where sc.org_id = $1 and sc.object = 'deals'
            and sc.position > greatest(0::bigint, (select coalesce(max(m.position), 0) from sync_marks m
                                                    where m.at < $2::timestamptz - interval '1 minute'))
            and sc.changed_at >= $2::timestamptz and r.id is not null
          order by sc.position limit 51`,
        [large.id, hourAgo],
      )
    ).rows[0]['QUERY PLAN'][0] as { 'Execution Time': number };
    lines.push(
      '',
      `The last hour's page at ${LARGE.toLocaleString('en-US')} deals in the database: ${plan['Execution Time'].toFixed(2)} ms (EXPLAIN ANALYZE).`,
    );
    process.stdout.write(`\n${lines.join('\n')}\n`);
  } finally {
    await server.stop();
  }
} finally {
  await db.end().catch(() => {});
  await admin.query(`drop database if exists ${name} with (force)`);
  await admin.end();
}
