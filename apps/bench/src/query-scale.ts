/**
 * `npm run bench:query`: do filtered and sorted lists (issue 31's query language) cost the same in an
 * organization of a million deals as in one of ten thousand? On PostgreSQL, two organizations (QUERY_SMALL,
 * default 10,000, and QUERY_LARGE, default 1,000,000 deals), each with the 20 custom fields of the bench's
 * "+ 20 custom" scenario (one of them unique, `external_id`; here `region` indexed too, `industry` not, for
 * the rows with and without a custom field's index), their deals written by SQL in chunks (the
 * API's create is not what is measured; the triggers that keep counts and claim unique values run as for
 * any write): 25 owners, 8 stages, values up to 500,000, created over two years, three in four updated
 * since. Then each call is measured one request at a time (p50, p99), its first page and the page after
 * its cursor, on both organizations, printed side by side with the ratio (issue 31: p50 under 50 ms and
 * within 2× of 10k; a filter no index serves answers within 2 s or is refused at once).
 *
 * QUERY_SECONDS (per call, default 3), BENCH_DATABASE_URL or TEST_DATABASE_URL (admin URL, this machine
 * only). The database is dropped at the end, unless QUERY_KEEP_DATABASE=true (to study plans, or to measure
 * it again with QUERY_DATABASE=<its name>, which skips the seeding).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { apiCall, crmCli, SERVER } from './crm-calls.ts';
import { CUSTOM_FIELDS, customValuesSql } from './custom-fields.ts';
import { API } from './load.ts';
import { startServerProcess, UNTHROTTLED } from './processes.ts';
import { measureSequential } from './sequential.ts';

const env = process.env;
const SMALL = Number(env.QUERY_SMALL ?? 10_000);
const LARGE = Number(env.QUERY_LARGE ?? 1_000_000);
const SECONDS = Number(env.QUERY_SECONDS ?? 3);
const CHUNK = 100_000;
const ADMIN_URL =
  env.BENCH_DATABASE_URL || env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const TWO_YEARS = 2 * 365 * 86_400;

const log = (msg: string) =>
  process.stdout.write(`[query ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

/** Deals `from`..`to` of an organization of `n`: deal 1 the newest, deal n two years old. */
async function seedDeals(db: pg.Client, orgId: string, n: number, from: number, to: number) {
  await db.query(
    `with st as (
       select array_agg(s.id order by s.position) as ids, min(p.id::text)::uuid as pipeline
         from pipelines p join pipeline_stages s on s.pipeline_id = p.id
        where p.org_id = $1 and p.is_default)
     insert into deals (id, org_id, title, company_name, value, currency, pipeline_id, stage_id, owner_name,
                        notes, created_at, updated_at, last_activity_at, custom)
     select gen_random_uuid(), $1, 'Deal ' || i, 'Company ' || (i % 997), (i::bigint * 7919) % 500000 + 1000, 'USD',
            st.pipeline, st.ids[1 + i % cardinality(st.ids)], 'Owner ' || (i % 25),
            case when i % 5 = 0 then 'Note ' || i end, c.at,
            case when i % 4 <> 0 then c.at + (now() - c.at) * (((i::bigint * 104729) % 1000) / 1000.0) end, c.at,
            ${customValuesSql('(i % 100000)', `'EXT-' || i`)}
       from generate_series($2::int, $3::int) i, st,
            lateral (select now() - make_interval(secs => (i::bigint * ${TWO_YEARS}) / $4::int) as at) c`,
    [orgId, from, to, n],
  );
}

interface Org {
  n: number;
  orgId: string;
  key: string;
  stageId: string;
}

/**
 * A call: its label, and its path for an organization (and the request's number: a path that changes with
 * it asks a new question each time, its total never counted before) and (page 2) the cursor its first page
 * gave.
 */
type Call = [string, (o: Org, i: number) => string];

const filter = (tree: unknown) => `filter=${encodeURIComponent(JSON.stringify(tree))}`;
const started = Date.now();
/** A moment `d` days before the bench started: the same filter each request, unless a call shifts it. */
const daysAgo = (d: number) => new Date(started - d * 86_400_000).toISOString();

const CALLS: Call[] = [
  ['GET /deals (no filter, newest first)', () => '/deals?limit=50'],
  [
    'stage_id eq, sort -created_at',
    (o) => `/deals?limit=50&sort=-created_at&${filter({ field: 'stage_id', op: 'eq', value: o.stageId })}`,
  ],
  [
    'owner_name eq, sort -created_at',
    () => `/deals?limit=50&sort=-created_at&${filter({ field: 'owner_name', op: 'eq', value: 'Owner 7' })}`,
  ],
  [
    'value between 100k and 110k, sort -value',
    () =>
      `/deals?limit=50&sort=-value&${filter({ field: 'value', op: 'between', value: [100_000, 110_000] })}`,
  ],
  [
    'value between, a new range each request (counted each time), sort -value',
    (_o, i) =>
      `/deals?limit=50&sort=-value&${filter({ field: 'value', op: 'between', value: [100_000 + i, 110_000 + i] })}`,
  ],
  ['sort -value (no filter)', () => '/deals?limit=50&sort=-value'],
  [
    'created_at in the last 30 days, sort -created_at',
    () =>
      `/deals?limit=50&sort=-created_at&${filter({ field: 'created_at', op: 'gte', value: daysAgo(30) })}`,
  ],
  [
    'created_at, 30 days to a new second each request (counted each time)',
    (_o, i) =>
      `/deals?limit=50&sort=-created_at&${filter({ field: 'created_at', op: 'gte', value: daysAgo(30 + i / 86_400) })}`,
  ],
  [
    'updated_at in the last 7 days, sort -updated_at',
    () => `/deals?limit=50&sort=-updated_at&${filter({ field: 'updated_at', op: 'gte', value: daysAgo(7) })}`,
  ],
  [
    'updated_at, 7 days to a new second each request (counted each time)',
    (_o, i) =>
      `/deals?limit=50&sort=-updated_at&${filter({ field: 'updated_at', op: 'gte', value: daysAgo(7 + i / 86_400) })}`,
  ],
  [
    'custom.external_id eq (a unique field)',
    (o) =>
      `/deals?limit=50&${filter({ field: 'custom.external_id', op: 'eq', value: `EXT-${Math.floor(o.n / 2)}` })}`,
  ],
  [
    'custom.region eq (an indexed field)',
    () => `/deals?limit=50&${filter({ field: 'custom.region', op: 'eq', value: 'emea_north' })}`,
  ],
  [
    'custom.region eq and owner_name eq (both indexed)',
    () =>
      `/deals?limit=50&${filter({
        and: [
          { field: 'owner_name', op: 'eq', value: 'Owner 3' },
          { field: 'custom.region', op: 'eq', value: 'emea_north' },
        ],
      })}`,
  ],
  [
    'custom.industry eq and owner_name eq (one indexed)',
    () =>
      `/deals?limit=50&${filter({
        and: [
          { field: 'owner_name', op: 'eq', value: 'Owner 3' },
          { field: 'custom.industry', op: 'eq', value: 'manufacturing' },
        ],
      })}`,
  ],
];

/** The bench's 20 fields, `region` indexed (its rows above), `industry` left as it is (its row without one). */
const FIELDS = CUSTOM_FIELDS.map((f) => (f.key === 'region' ? { ...f, indexed: true } : f));

/** A filter no index serves: answered within 2 s, or refused (400) at once. */
const UNINDEXED: Call = [
  'notes contains, custom.seats gte (no index)',
  () =>
    `/deals?limit=50&${filter({
      and: [
        { field: 'notes', op: 'contains', value: '99' },
        { field: 'custom.seats', op: 'gte', value: 400 },
      ],
    })}`,
];

async function main() {
  const admin = new URL(ADMIN_URL);
  if (!['127.0.0.1', 'localhost'].includes(admin.hostname))
    throw new Error(`${admin.hostname} is not this machine`);
  // A database kept by an earlier run (QUERY_KEEP_DATABASE) is measured again as it is, without seeding.
  const reuse = env.QUERY_DATABASE;
  const name = reuse ?? `crm_query_${randomBytes(4).toString('hex')}`;
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  if (!reuse) await client.query(`create database ${name}`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const dbEnv = { DATABASE_URL: url.toString(), CRM_DATA_DIR: '' };
  const db = new pg.Client({ connectionString: url.toString() });
  try {
    const created: Array<Omit<Org, 'stageId'>> = [];
    for (const n of [SMALL, LARGE]) {
      if (reuse) {
        const [org] = (await crmCli(dbEnv, 'org', 'list')).lines.filter(
          (o) => o.name === `Query ${n}`,
        ) as Array<{
          org_id: string;
        }>;
        if (!org) throw new Error(`${name} holds no organization "Query ${n}"`);
        const key = (await crmCli(dbEnv, 'key', 'create', '--org', org.org_id, '--name', 'bench'))
          .lines[0] as {
          api_key: string;
        };
        created.push({ n, orgId: org.org_id, key: key.api_key });
        continue;
      }
      const org = (await crmCli(dbEnv, 'org', 'create', `Query ${n}`)).lines[0] as {
        org_id: string;
        api_key: string;
      };
      created.push({ n, orgId: org.org_id, key: org.api_key });
    }
    const server = await startServerProcess('service', SERVER, { ...UNTHROTTLED, ...dbEnv }, 300_000);
    await db.connect();
    try {
      const orgs: Org[] = [];
      for (const o of created) {
        if (reuse) {
          const stages = (await apiCall(server.url, o.key, 'GET', '/pipeline/stages')).data as Array<{
            id: string;
          }>;
          orgs.push({ ...o, stageId: (stages[2] ?? stages[0])?.id as string });
          continue;
        }
        for (const field of FIELDS) await apiCall(server.url, o.key, 'POST', '/custom-fields/deals', field);
        const t0 = performance.now();
        for (let from = 1; from <= o.n; from += CHUNK) {
          await seedDeals(db, o.orgId, o.n, from, Math.min(o.n, from + CHUNK - 1));
          log(
            `${Math.min(o.n, from + CHUNK - 1).toLocaleString('en-US')} of ${o.n.toLocaleString('en-US')} deals`,
          );
        }
        log(
          `${o.n.toLocaleString('en-US')} deals written in ${((performance.now() - t0) / 1000).toFixed(0)} s`,
        );
        const stages = (await apiCall(server.url, o.key, 'GET', '/pipeline/stages')).data as Array<{
          id: string;
        }>;
        orgs.push({ ...o, stageId: (stages[2] ?? stages[0])?.id as string });
      }
      // Written by SQL, the deals' changes wait for their place in the sync order, as an import's would
      // (the import places them when it ends); a read of the event feed places them, as the service would.
      for (;;) {
        const [due] = (
          await db.query('select exists (select 1 from sync_changes where position is null) as due')
        ).rows as Array<{ due: boolean }>;
        if (!due?.due) break;
        await apiCall(server.url, orgs[0]?.key as string, 'GET', '/events?limit=1');
      }
      const t0 = performance.now();
      await db.query('vacuum (analyze) deals');
      await db.query('vacuum (analyze) custom_unique_values');
      await db.query('vacuum (analyze) custom_indexed_values');
      await db.query('vacuum (analyze) sync_changes');
      log(`vacuum (analyze) in ${((performance.now() - t0) / 1000).toFixed(0)} s`);

      const lines = [
        `| call | p50 at ${SMALL.toLocaleString('en-US')} (ms) | p50 at ${LARGE.toLocaleString('en-US')} (ms) | ratio | page 2 p50 small / large (ms) | total at large |`,
        '|---|---|---|---|---|---|',
      ];
      let asked = 0;
      const measure = (o: Org, path: (i: number) => string) =>
        measureSequential(server.url, o.key, () => ({ path: `${API}${path(++asked)}` }), {
          seconds: SECONDS,
          warmupSeconds: 1,
          pid: server.pid,
        });
      for (const [label, make] of CALLS) {
        const first = [];
        const second = [];
        let total = '';
        for (const o of orgs) {
          const page = await apiCall(server.url, o.key, 'GET', make(o, 0));
          total = String(page.meta?.total ?? '');
          first.push(await measure(o, (i) => make(o, i)));
          const next = page.meta?.next_cursor as string | null | undefined;
          second.push(next ? await measure(o, (i) => `${make(o, i)}&after=${next}`) : undefined);
        }
        const [s, l] = first as [(typeof first)[0], (typeof first)[0]];
        if (s.non2xx || l.non2xx)
          throw new Error(`${label}: non-2xx answers ${JSON.stringify([s.statuses, l.statuses])}`);
        const p2 = second.map((r) => (r ? r.p50.toFixed(2) : '(one page)')).join(' / ');
        lines.push(
          `| ${label} | ${s.p50.toFixed(2)} | ${l.p50.toFixed(2)} | ${(l.p50 / s.p50).toFixed(2)}× | ${p2} | ${total} |`,
        );
        log(lines.at(-1) as string);
      }
      for (const o of orgs) {
        const t = performance.now();
        const res = await fetch(`${server.url}${API}${UNINDEXED[1](o, 0)}`, {
          headers: { authorization: `Bearer ${o.key}` },
        });
        const body = (await res.json()) as { meta?: { total?: number }; error?: { message?: string } };
        lines.push(
          `| ${UNINDEXED[0]} at ${o.n.toLocaleString('en-US')} | ${(performance.now() - t).toFixed(0)} ms, ${res.status} | ${res.ok ? `total ${body.meta?.total}` : (body.error?.message ?? '').slice(0, 80)} | | | |`,
        );
        log(lines.at(-1) as string);
      }
      process.stdout.write(`\n${lines.join('\n')}\n`);
    } finally {
      await server.stop();
      await db.end();
    }
  } finally {
    if (env.QUERY_KEEP_DATABASE === 'true' || reuse) log(`kept the database ${name}`);
    else await client.query(`drop database if exists ${name} with (force)`);
    await client.end();
  }
}

await main();
