/**
 * `npm run bench:activities`: do a deal's activities and its timeline cost the same in an organization of
 * a million activities as in one of ten thousand (issue 30: within 2×)? On PostgreSQL, two organizations
 * (ACTIVITIES_SMALL, default 10,000, and ACTIVITIES_LARGE, default 1,000,000 activities), each with as
 * many deals as gives every deal ACTIVITIES_PER_DEAL (default 100) activities, so the deal read is alike
 * and only the organization's size differs. Deals are made through the API (POST /deals/batch); the
 * activities and their links are written by SQL in one statement (the API's create is not what is
 * measured). Then each call is measured one request at a time (p50, p99) on both organizations.
 *
 * Then, in the small organization, the deal detail of a deal with 50 stakeholders (25 contacts of its own,
 * 25 linked from another deal) and 1,000 logged activities beside today's typical one (3 contacts, 20
 * activities of the service's own), measured the same way (issue 30: within 1.3×).
 *
 * ACTIVITIES_SECONDS (per call, default 3), BENCH_DATABASE_URL or TEST_DATABASE_URL (admin URL, this
 * machine only). The database is dropped at the end.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { apiCall as call, crmCli, SERVER } from './crm-calls.ts';
import { API } from './load.ts';
import { startServerProcess, UNTHROTTLED } from './processes.ts';
import { measureSequential } from './sequential.ts';

const env = process.env;
const SMALL = Number(env.ACTIVITIES_SMALL ?? 10_000);
const LARGE = Number(env.ACTIVITIES_LARGE ?? 1_000_000);
const PER_DEAL = Number(env.ACTIVITIES_PER_DEAL ?? 100);
const SECONDS = Number(env.ACTIVITIES_SECONDS ?? 3);
const ADMIN_URL =
  env.BENCH_DATABASE_URL || env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

const log = (msg: string) =>
  process.stdout.write(`[activities ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

interface Org {
  n: number;
  orgId: string;
  key: string;
  deal: string;
  /** The deal's 50th activity (a cursor one page deep) and the organization's middle one. */
  dealAfter: string;
  orgAfter: string;
  timelineAfter: string;
}

/** `n` activities, each linked to one of the organization's deals in turn, newest a second apart. */
async function seed(db: pg.Client, orgId: string, n: number): Promise<void> {
  await db.query(
    `with d as (select array_agg(id order by id) as ids from deals where org_id = $1),
     e as (insert into engagements (id, org_id, type, subject, occurred_at, created_at)
           select gen_random_uuid(), $1, (array['note', 'call', 'meeting', 'email'])[1 + i % 4], 'Activity ' || i,
                  now() - make_interval(secs => i), now()
             from generate_series(1, $2::int) i
           returning id, subject, occurred_at)
     insert into engagement_links (engagement_id, org_id, target_type, target_id, occurred_at)
     select e.id, $1, 'deal', d.ids[1 + substr(e.subject, 10)::int % cardinality(d.ids)], e.occurred_at from e, d`,
    [orgId, n],
  );
}

/**
 * GET /deals/{id} of a deal with 50 stakeholders and 1,000 logged activities against a typical deal's (3
 * contacts, 20 activities of the service's own: created, 3 contacts added, 16 updates), in one organization.
 */
async function detailBench(server: { url: string; pid: number }, db: pg.Client, o: Org) {
  const deal = async (title: string) =>
    ((await call(server.url, o.key, 'POST', '/deals', { title })).data as { id: string }).id;
  const contacts = async (dealId: string, n: number) =>
    (
      (
        await call(server.url, o.key, 'POST', '/contacts/batch', {
          items: Array.from({ length: n }, (_, i) => ({
            name: `Person ${i}`,
            deal_id: dealId,
            role_type: 'influencer',
          })),
        })
      ).data as Array<{ id: string }>
    ).map((c) => c.id);
  const typical = await deal('Typical deal');
  await contacts(typical, 3);
  for (let i = 0; i < 16; i++)
    await call(server.url, o.key, 'PATCH', `/deals/${typical}`, { notes: `Note ${i}` });
  const rich = await deal('Rich deal');
  await contacts(rich, 25);
  const elsewhere = await contacts(await deal('Their own deal'), 25);
  for (const id of elsewhere)
    await call(server.url, o.key, 'PUT', `/deals/${rich}/stakeholders/${id}`, { role_type: 'end_user' });
  await db.query(
    `with e as (insert into engagements (id, org_id, type, subject, occurred_at, created_at)
       select gen_random_uuid(), $1, 'call', 'Call ' || i, now() - make_interval(secs => i), now()
         from generate_series(1, 1000) i returning id, occurred_at)
     insert into engagement_links (engagement_id, org_id, target_type, target_id, occurred_at)
     select e.id, $1, 'deal', $2, e.occurred_at from e`,
    [o.orgId, rich],
  );
  await db.query('analyze engagements; analyze engagement_links; analyze deal_stakeholders;');
  const measure = (id: string) =>
    measureSequential(server.url, o.key, () => ({ path: `${API}/deals/${id}` }), {
      seconds: SECONDS,
      warmupSeconds: 1,
      pid: server.pid,
    });
  const [t, r] = [await measure(typical), await measure(rich)];
  const lines = [
    '| GET /deals/{id} | p50 (ms) | p99 (ms) |',
    '|---|---|---|',
    `| typical: 3 contacts, 20 activities | ${t.p50.toFixed(2)} | ${t.p99.toFixed(1)} |`,
    `| 50 stakeholders, 1,000 logged activities | ${r.p50.toFixed(2)} | ${r.p99.toFixed(1)} |`,
    `| ratio | ${(r.p50 / t.p50).toFixed(2)}× | |`,
  ];
  process.stdout.write(`\n${lines.join('\n')}\n`);
}

async function main() {
  const admin = new URL(ADMIN_URL);
  if (!['127.0.0.1', 'localhost'].includes(admin.hostname))
    throw new Error(`${admin.hostname} is not this machine`);
  const name = `crm_activities_${randomBytes(4).toString('hex')}`;
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  await client.query(`create database ${name}`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const dbEnv = { DATABASE_URL: url.toString(), CRM_DATA_DIR: '' };
  const db = new pg.Client({ connectionString: url.toString() });
  try {
    const orgs: Array<Pick<Org, 'n' | 'orgId' | 'key'>> = [];
    for (const n of [SMALL, LARGE]) {
      const created = (await crmCli(dbEnv, 'org', 'create', `Activities ${n}`)).lines[0] as {
        org_id: string;
        api_key: string;
      };
      orgs.push({ n, orgId: created.org_id, key: created.api_key });
    }
    const server = await startServerProcess('service', SERVER, { ...UNTHROTTLED, ...dbEnv }, 300_000);
    await db.connect();
    try {
      const fixtures: Org[] = [];
      for (const o of orgs) {
        const deals = Math.max(1, Math.round(o.n / PER_DEAL));
        const t0 = performance.now();
        for (let i = 0; i < deals; i += 100) {
          const items = Array.from({ length: Math.min(100, deals - i) }, (_, k) => ({
            title: `Deal ${i + k}`,
          }));
          await call(server.url, o.key, 'POST', '/deals/batch', { items });
        }
        await seed(db, o.orgId, o.n);
        await db.query('analyze engagements; analyze engagement_links; analyze deals;');
        log(
          `${o.n.toLocaleString('en-US')} activities on ${deals.toLocaleString('en-US')} deals written in ${((performance.now() - t0) / 1000).toFixed(0)} s`,
        );
        const deal = (
          (await call(server.url, o.key, 'GET', '/deals?limit=1')).data as Array<{ id: string }>
        )[0]?.id as string;
        const page = await call(server.url, o.key, 'GET', `/activities?deal_id=${deal}&limit=50`);
        const timeline = await call(server.url, o.key, 'GET', `/deals/${deal}/timeline?limit=50`);
        const { rows } = await db.query(
          'select id from engagements where org_id = $1 order by occurred_at desc, id desc offset $2 limit 1',
          [o.orgId, Math.floor(o.n / 2)],
        );
        fixtures.push({
          ...o,
          deal,
          dealAfter: page.meta?.next_cursor as string,
          orgAfter: rows[0].id,
          timelineAfter: timeline.meta?.next_cursor as string,
        });
      }
      const calls: Array<[string, (o: Org) => string]> = [
        ['GET /activities?deal_id=', (o) => `/activities?deal_id=${o.deal}&limit=50`],
        [
          'GET /activities?deal_id= (page 2)',
          (o) => `/activities?deal_id=${o.deal}&limit=50&after=${o.dealAfter}`,
        ],
        ['GET /deals/{id}/timeline', (o) => `/deals/${o.deal}/timeline?limit=50`],
        [
          'GET /deals/{id}/timeline (page 2)',
          (o) => `/deals/${o.deal}/timeline?limit=50&after=${o.timelineAfter}`,
        ],
        ['GET /deals/{id} (recent_activities)', (o) => `/deals/${o.deal}`],
        ['GET /activities', () => '/activities?limit=50'],
        ['GET /activities (middle of the org)', (o) => `/activities?limit=50&after=${o.orgAfter}`],
        ['GET /activities?type=call', () => '/activities?type=call&limit=50'],
      ];
      const lines = [
        `| call | p50 at ${SMALL.toLocaleString('en-US')} (ms) | p50 at ${LARGE.toLocaleString('en-US')} (ms) | ratio | p99 small / large (ms) |`,
        '|---|---|---|---|---|',
      ];
      for (const [label, make] of calls) {
        const stats = [];
        for (const o of fixtures)
          stats.push(
            await measureSequential(server.url, o.key, () => ({ path: `${API}${make(o)}` }), {
              seconds: SECONDS,
              warmupSeconds: 1,
              pid: server.pid,
            }),
          );
        const [s, l] = stats as [(typeof stats)[0], (typeof stats)[0]];
        if (s.non2xx || l.non2xx)
          throw new Error(`${label}: non-2xx answers ${JSON.stringify([s.statuses, l.statuses])}`);
        lines.push(
          `| ${label} | ${s.p50.toFixed(2)} | ${l.p50.toFixed(2)} | ${(l.p50 / s.p50).toFixed(2)}× | ${s.p99.toFixed(1)} / ${l.p99.toFixed(1)} |`,
        );
        log(lines.at(-1) as string);
      }
      process.stdout.write(`\n${lines.join('\n')}\n`);
      await detailBench(server, db, fixtures[0] as Org);
    } finally {
      await server.stop();
      await db.end();
    }
  } finally {
    await client.query(`drop database if exists ${name} with (force)`);
    await client.end();
  }
}

await main();
