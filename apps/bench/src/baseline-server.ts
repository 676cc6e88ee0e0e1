/**
 * The baseline: a bare node:http server doing the same SQL work as the service for the benchmarked
 * routes, with no framework, ORM or validation library. Search runs the service's own statement (its SQL
 * text from `searchSql`, compiled once per request shape by the query builder alone): a hand copy of a
 * ranked statement of this size would drift from it. Run as its own process:
 *
 *   BASELINE_DATABASE_URL=postgres://... | BASELINE_DATA_DIR=<CRM_DATA_DIR>  PORT=... node baseline-server.ts
 *
 * With a data dir it opens the embedded cluster (<dir>/pglite) with PGlite directly; the caller makes
 * sure nothing else has it open.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import path from 'node:path';
import { matchedOf, searchSql } from '@crm/api';
import { API_BASE_PATH } from '@crm/config';
import { PGlite } from '@electric-sql/pglite';
import { btree_gin } from '@electric-sql/pglite/contrib/btree_gin';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import pg from 'pg';

type Row = Record<string, unknown>;
interface Db {
  query(sql: string, params?: unknown[]): Promise<Row[]>;
  close(): Promise<void>;
}

async function openPostgres(url: string): Promise<Db> {
  // Without JIT and parallel workers, as the service's connections (packages/db/src/orm.ts): the same database work.
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    options: '-c jit=off -c max_parallel_workers_per_gather=0',
  });
  return {
    query: async (sql, params) => (await pool.query(sql, params)).rows,
    close: () => pool.end(),
  };
}

async function openPglite(dataDir: string): Promise<Db> {
  const db = await PGlite.create({
    dataDir: path.join(dataDir, 'pglite'),
    extensions: { pg_trgm, btree_gin },
  });
  return {
    query: async (sql, params) => (await db.query<Row>(sql, params)).rows,
    close: () => db.close(),
  };
}

/** UUIDv7 as the service's entities generate them: 48-bit ms timestamp, version and variant bits, random rest. */
function uuidv7(): string {
  const b = randomBytes(16);
  const ms = Date.now();
  b.writeUIntBE(ms, 0, 6);
  b[6] = ((b[6] ?? 0) & 0x0f) | 0x70;
  b[8] = ((b[8] ?? 0) & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const iso = (v: unknown) =>
  v == null ? null : v instanceof Date ? v.toISOString() : new Date(String(v)).toISOString();
const num = (v: unknown) => (v == null ? null : Number(v));
const str = (v: unknown) => (v == null ? null : String(v));

const DEAL_COLUMNS = `d.id, d.title, d.company_name, d.value, d.currency, d.win_probability, d.deal_health,
  d.lifecycle_stage, d.stage_id, s.name as stage_name, s.stage_type, d.pipeline_id, p.name as pipeline_name,
  d.owner_name, d.contact_name, d.contact_email, d.contact_phone, d.notes, d.lead_source, d.expected_close_date,
  d.last_activity_at, d.created_at, d.updated_at`;
const DEAL_FROM =
  'deals d join pipeline_stages s on s.id = d.stage_id join pipelines p on p.id = d.pipeline_id';

function dealDto(r: Row) {
  return {
    id: r.id,
    title: r.title,
    company_name: str(r.company_name),
    value: num(r.value),
    currency: str(r.currency),
    win_probability: num(r.win_probability),
    deal_health: str(r.deal_health),
    lifecycle_stage: str(r.lifecycle_stage),
    stage_id: r.stage_id,
    stage_name: r.stage_name,
    stage_type: r.stage_type,
    pipeline_id: r.pipeline_id,
    pipeline_name: r.pipeline_name,
    owner_name: str(r.owner_name),
    contact_name: str(r.contact_name),
    contact_email: str(r.contact_email),
    contact_phone: str(r.contact_phone),
    notes: str(r.notes),
    lead_source: str(r.lead_source),
    expected_close_date: iso(r.expected_close_date),
    last_activity_at: iso(r.last_activity_at),
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
  };
}

class HttpError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

async function authenticate(db: Db, req: IncomingMessage): Promise<string> {
  const header = req.headers.authorization ?? '';
  const token = header.startsWith('Bearer ') ? header.slice(7).trim() : '';
  if (!token) throw new HttpError(401, 'Missing Authorization header');
  const hash = createHash('sha256').update(token).digest('hex');
  const [row] = await db.query(
    'select id, org_id, key_hash from api_keys where key_hash = $1 and revoked_at is null',
    [hash],
  );
  if (!row || !timingSafeEqual(Buffer.from(String(row.key_hash)), Buffer.from(hash)))
    throw new HttpError(401, 'Invalid or revoked API key');
  return String(row.org_id);
}

async function readJson(req: IncomingMessage): Promise<Row> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  try {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
    if (body && typeof body === 'object' && !Array.isArray(body)) return body as Row;
  } catch {
    // falls through to the 400
  }
  throw new HttpError(400, 'body must be a JSON object');
}

async function listDeals(db: Db, orgId: string, url: URL) {
  const limit = Math.min(Math.max(Number(url.searchParams.get('limit') ?? 50) || 50, 1), 100);
  const offset = Math.max(Number(url.searchParams.get('offset') ?? 0) || 0, 0);
  const [rows, count] = await Promise.all([
    db.query(
      `select ${DEAL_COLUMNS} from ${DEAL_FROM} where d.org_id = $1 order by d.created_at desc, d.id desc limit $2 offset $3`,
      [orgId, limit, offset],
    ),
    db.query('select count(*) as total from deals where org_id = $1', [orgId]),
  ]);
  return { data: rows.map(dealDto), meta: { total: Number(count[0]?.total ?? 0), limit, offset } };
}

/** The service's statements: the default pipeline's first stage, then deal, event and activity in one insert. */
async function createDeal(db: Db, orgId: string, body: Row) {
  const title = typeof body.title === 'string' ? body.title.trim() : '';
  if (!title || title.length > 500) throw new HttpError(400, 'title: required, 1 to 500 characters');
  const company = typeof body.company_name === 'string' ? body.company_name : null;
  const value = typeof body.value === 'number' && body.value >= 0 ? body.value : null;
  const [stage] = await db.query(
    `select s.id, s.name, s.stage_type, s.pipeline_id, p.name as pipeline_name
       from pipeline_stages s join pipelines p on p.id = s.pipeline_id
      where p.org_id = $1 and p.is_default order by s.position limit 1`,
    [orgId],
  );
  if (!stage) throw new Error('organization has no default pipeline');
  const now = new Date();
  const id = uuidv7();
  const deal = dealDto({
    id,
    title,
    company_name: company,
    value,
    currency: 'USD',
    lifecycle_stage: 'lead',
    stage_id: stage.id,
    stage_name: stage.name,
    stage_type: stage.stage_type,
    pipeline_id: stage.pipeline_id,
    pipeline_name: stage.pipeline_name,
    last_activity_at: now,
    created_at: now,
  });
  const event = JSON.stringify({ type: 'deal.created', timestamp: now.toISOString(), data: deal });
  await db.query(
    `with deal as (
       insert into deals (id, org_id, title, company_name, value, currency, lifecycle_stage, lifecycle_stage_manual,
                          pipeline_id, stage_id, last_activity_at, created_at)
       values ($1, $2, $3, $4, $5, 'USD', 'lead', false, $6, $7, $8, $8)
       returning id, org_id, created_at),
     event as (
       insert into outbox_events (id, org_id, type, payload, created_at)
       select $9, org_id, 'deal.created', $10, created_at from deal)
     insert into activities (id, org_id, deal_id, type, description, created_at)
     select $11, org_id, id, 'deal_created', $12, created_at from deal`,
    [
      id,
      orgId,
      title,
      company,
      value,
      stage.pipeline_id,
      stage.id,
      now,
      uuidv7(),
      event,
      uuidv7(),
      `Deal "${title}" created in stage ${stage.name}`,
    ],
  );
  return { data: deal };
}

/**
 * PATCH of a deal's value and close date as the service writes it: the row, a deal_updated activity and a
 * deal.updated event with the changes, in one statement; answers the deal.
 */
async function updateDeal(db: Db, orgId: string, id: string, body: Row) {
  if (!UUID.test(id)) throw new HttpError(400, 'id: must be a UUID');
  const value = typeof body.value === 'number' && body.value >= 0 ? body.value : null;
  const close = typeof body.expected_close_date === 'string' ? new Date(body.expected_close_date) : null;
  const now = new Date();
  const [deal] = await db.query(
    `with old as (
       select id, org_id, value, expected_close_date from deals where id = $1 and org_id = $2 for update),
     changed as (
       update deals d set value = $3, expected_close_date = $4, updated_at = $5, last_activity_at = $5
         from old where d.id = old.id
       returning d.id),
     changes as (
       select old.org_id, old.id, jsonb_build_object(
         'value', jsonb_build_object('from', old.value::float8, 'to', $3::float8),
         'expected_close_date', jsonb_build_object('from', old.expected_close_date, 'to', $4::timestamptz)) as c
         from old join changed on changed.id = old.id),
     event as (
       insert into outbox_events (id, org_id, type, payload, created_at)
       select $6, org_id, 'deal.updated',
              jsonb_build_object('type', 'deal.updated', 'timestamp', $5::timestamptz,
                                 'data', jsonb_build_object('id', id), 'changes', c)::text, $5
         from changes),
     activity as (
       insert into activities (id, org_id, deal_id, type, description, changes, created_at)
       select $7, org_id, id, 'deal_updated', 'Updated value, expected_close_date', c, $5 from changes)
     select id from changed`,
    [id, orgId, value, close, now, uuidv7(), uuidv7()],
  );
  if (!deal) throw new HttpError(404, 'Deal not found');
  // Read back after the statement: its own CTEs' writes are not visible to it.
  const [row] = await db.query(`select ${DEAL_COLUMNS} from ${DEAL_FROM} where d.id = $1 and d.org_id = $2`, [
    id,
    orgId,
  ]);
  return { data: dealDto(row as Row) };
}

async function dealDetail(db: Db, orgId: string, id: string) {
  if (!UUID.test(id)) throw new HttpError(400, 'id: must be a UUID');
  const [deal] = await db.query(
    `select ${DEAL_COLUMNS} from ${DEAL_FROM} where d.id = $1 and d.org_id = $2`,
    [id, orgId],
  );
  if (!deal) throw new HttpError(404, 'Deal not found');
  const [contacts, activities] = await Promise.all([
    db.query(
      `select id, name, email, title, role_type, influence_level, engagement_level, sentiment
         from contacts where deal_id = $1 and org_id = $2 order by created_at, id`,
      [id, orgId],
    ),
    db.query(
      `select id, type, description, created_at from activities
        where deal_id = $1 and org_id = $2 order by created_at desc, id desc limit 20`,
      [id, orgId],
    ),
  ]);
  return {
    data: {
      deal: dealDto(deal),
      stakeholders: contacts.map((c) => ({
        id: c.id,
        name: c.name,
        email: str(c.email),
        title: str(c.title),
        role_type: str(c.role_type),
        influence_level: str(c.influence_level),
        engagement_level: str(c.engagement_level),
        sentiment: str(c.sentiment),
      })),
      recent_activities: activities.map((a) => ({
        id: a.id,
        type: a.type,
        description: str(a.description),
        created_at: iso(a.created_at),
      })),
    },
  };
}

/** The organization's kept deal and contact counts, read at most once a minute, as the service reads them to pick the plan. */
const keptSizes = new Map<string, { at: number; deals: number; contacts: number }>();
async function sizesOf(db: Db, orgId: string) {
  const known = keptSizes.get(orgId);
  if (known && Date.now() - known.at < 60_000) return known;
  const [row] = await db.query(
    `select (select sum(n) from deal_counts where org_id = $1) as deals,
            (select sum(n) from contact_counts where org_id = $1) as contacts`,
    [orgId],
  );
  const size = { at: Date.now(), deals: Number(row?.deals ?? 0), contacts: Number(row?.contacts ?? 0) };
  keptSizes.set(orgId, size);
  return size;
}

const SEARCH_PLAIN_UP_TO = Number(process.env.CRM_SEARCH_PLAIN_UP_TO ?? 50_000);
const SEARCH_NEWEST_WINDOW = Number(process.env.CRM_SEARCH_NEWEST_WINDOW ?? 2_000);

/** The service's one ranked statement (its SQL text, from `searchSql`: the same database work), and its answer. */
async function search(db: Db, orgId: string, url: URL) {
  const q = (url.searchParams.get('q') ?? '').trim();
  if (q.length < 2 || q.length > 200) throw new HttpError(400, 'q: 2 to 200 characters');
  const size = await sizesOf(db, orgId);
  const large = { deals: size.deals > SEARCH_PLAIN_UP_TO, contacts: size.contacts > SEARCH_PLAIN_UP_TO };
  const statement = searchSql(orgId, q, large, SEARCH_NEWEST_WINDOW);
  const [row] = await db.query(statement.sql, statement.parameters as unknown[]);
  const json = <T>(v: unknown): T => (typeof v === 'string' ? JSON.parse(v) : v) as T;
  const deals = json<Row[]>(row?.deals ?? '[]');
  const contacts = json<Row[]>(row?.contacts ?? '[]');
  const companies = json<Row[]>(row?.companies ?? '[]');
  return {
    data: {
      deals: deals.map((d) => ({
        id: d.id,
        title: d.title,
        company_name: str(d.company_name),
        stage: str(d.stage),
        value: num(d.value),
        health: str(d.deal_health),
        win_probability: num(d.win_probability),
      })),
      contacts: contacts.map((c) => ({
        id: c.id,
        name: c.name,
        email: str(c.email),
        title: str(c.title),
        role_type: str(c.role_type),
        deal_id: str(c.deal_id),
        deal_title: str(c.deal_title),
        company: str(c.company),
      })),
      ...(companies.length > 0
        ? {
            companies: companies.map((c) => ({
              id: c.id,
              name: c.name,
              domain: str(c.domain),
              industry: str(c.industry),
            })),
          }
        : {}),
    },
    meta: {
      deals: matchedOf(row?.deals_matched),
      contacts: matchedOf(row?.contacts_matched),
      ...(companies.length > 0 ? { companies: matchedOf(row?.companies_matched) } : {}),
      count_bound: 1000,
    },
  };
}

const PREFIX = API_BASE_PATH;

async function route(db: Db, req: IncomingMessage): Promise<{ status: number; body: unknown }> {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const p = url.pathname;
  if (p === '/healthz') return { status: 200, body: { status: 'ok' } };
  // Like the service's readiness check, a round trip to the database (which also shows its queue).
  if (p === '/readyz') return { status: 200, body: { status: (await db.query('select 1')) && 'ready' } };
  if (!p.startsWith(`${PREFIX}/`)) throw new HttpError(404, 'Not found');
  const rest = p.slice(PREFIX.length);
  if (rest === '/deals' && req.method === 'GET')
    return { status: 200, body: await listDeals(db, await authenticate(db, req), url) };
  if (rest === '/deals' && req.method === 'POST') {
    const orgId = await authenticate(db, req);
    return { status: 201, body: await createDeal(db, orgId, await readJson(req)) };
  }
  if (rest.startsWith('/deals/') && req.method === 'GET')
    return {
      status: 200,
      body: await dealDetail(db, await authenticate(db, req), decodeURIComponent(rest.slice(7))),
    };
  if (rest.startsWith('/deals/') && req.method === 'PATCH') {
    const orgId = await authenticate(db, req);
    return {
      status: 200,
      body: await updateDeal(db, orgId, decodeURIComponent(rest.slice(7)), await readJson(req)),
    };
  }
  if (rest === '/search' && req.method === 'GET')
    return { status: 200, body: await search(db, await authenticate(db, req), url) };
  throw new HttpError(404, 'Not found');
}

function send(res: ServerResponse, status: number, body: unknown) {
  const json = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(json),
  });
  res.end(json);
}

const url = process.env.BASELINE_DATABASE_URL;
const dataDir = process.env.BASELINE_DATA_DIR;
if (!url && !dataDir) {
  process.stderr.write('baseline: set BASELINE_DATABASE_URL or BASELINE_DATA_DIR\n');
  process.exit(1);
}
const db = url ? await openPostgres(url) : await openPglite(dataDir as string);
const server = createServer((req, res) => {
  route(db, req).then(
    ({ status, body }) => send(res, status, body),
    (err: unknown) => {
      if (err instanceof HttpError) send(res, err.status, { error: { message: err.message } });
      else {
        process.stderr.write(`baseline: ${(err as Error).stack ?? String(err)}\n`);
        send(res, 500, { error: { message: 'internal error' } });
      }
    },
  );
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1');

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  server.close();
  server.closeAllConnections();
  db.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
