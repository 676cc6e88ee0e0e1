import type { EntityManager, Tables } from '@crm/db';
import {
  type Expression,
  expressionBuilder,
  type InferResult,
  type Kysely,
  type SelectQueryBuilder,
  type SqlBool,
  sql,
} from 'kysely';
import { LRUCache } from 'lru-cache';
import { currentOrg, orgQuery } from '../../org-scope.ts';
import { asJson } from '../../read-model.ts';

/** How many deals and how many contacts one search returns at most. */
export const SEARCH_LIMIT = 20;

/** `%q%` with LIKE's own wildcards escaped, so "50%" finds "50%" and not everything. */
export function likePattern(q: string): string {
  return `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** A contact (as `c`) whose name, email or title contains the pattern: what search and `GET /contacts?q=` match. */
export const contactMatches = (pattern: string) =>
  sql<SqlBool>`(c.name ilike ${pattern} or c.email ilike ${pattern} or c.title ilike ${pattern})`;

/** How long a process trusts an organization's kept sizes (they only pick a plan: both plans are exact). */
const SIZE_TTL_MS = 60_000;

/**
 * The newest SEARCH_LIMIT rows of `rows` (one table's rows, with id, created_at and the columns `match`
 * reads, as `alias`) that match.
 *
 * In a large organization the planner, which estimates a `%term%` match from its statistics, may walk the
 * (org_id, created_at) index for a term it takes for common of which a hundred rows match: a walk of the
 * whole organization (measured at a million deals: up to 490 ms, where the trigram indexes answer in
 * 15-60). So a large organization's search reads its `window` newest rows first; if SEARCH_LIMIT of
 * them match, they are the answer (every other match is older); if not, the term is rare, and every match
 * is read over the trigram indexes (the `offset 0` subquery is planned for all its rows, where a walk is
 * never the cheaper plan) and sorted. The branches sit behind one-time filters, so one of them runs.
 *
 * The builder is untyped inside (it serves both tables); the caller names the rows' type.
 */
function newestMatches<Row>(
  // biome-ignore lint/suspicious/noExplicitAny: one helper for the deals' and the contacts' search
  db: Kysely<any>,
  large: boolean,
  alias: 'd' | 'c',
  // biome-ignore lint/suspicious/noExplicitAny: see above
  rows: SelectQueryBuilder<any, any, Row>,
  match: Expression<SqlBool>,
  window: number,
) {
  // Built without the scope plugin: a builder of `db` would be scoped when nested and again with the whole.
  db = db.withoutPlugins();
  const newestFirst = <Q extends SelectQueryBuilder<never, never, unknown>>(q: Q) =>
    q.orderBy(sql.ref('created_at'), 'desc').orderBy(sql.ref('id'), 'desc') as Q;
  const limit = sql.lit(SEARCH_LIMIT);
  const all = () => db.selectFrom(rows.as(alias)).selectAll();
  type Rows = SelectQueryBuilder<Record<string, Row>, string, Row>;
  if (!large) return newestFirst(all().where(match)).limit(limit) as unknown as Rows;
  const found = sql<number>`(select count(*) from hits)`;
  const rare = newestFirst(
    db
      .selectFrom(all().where(match).offset(sql.lit(0)).as('every_match'))
      .selectAll()
      .where(found, '<', limit),
  ).limit(limit);
  return db
    .with('newest', () => newestFirst(all()).limit(window))
    .with('hits', (qc) =>
      newestFirst(qc.selectFrom(`newest as ${alias}`).selectAll().where(match)).limit(limit),
    )
    .selectFrom('hits')
    .selectAll()
    .where(found, '=', limit)
    .unionAll(db.selectFrom(rare.as('rare')).selectAll()) as unknown as Rows;
}

/** Each list as one json array, newest first (`[]` when none): `x`'s rows, its columns as each object's keys. */
const newestAsJson = (rows: Expression<unknown>) =>
  sql`(select coalesce(json_agg(x order by x.created_at desc, x.id desc), '[]'::json) from ${rows} x)`;

const tables = expressionBuilder<Tables, never>();

const searchedDeals = () =>
  tables
    .selectFrom('deals as d')
    .select([
      'd.id',
      'd.title',
      'd.company_name',
      'd.stage_id',
      'd.value',
      'd.deal_health',
      'd.win_probability',
      'd.created_at',
    ]);

const searchedContacts = () =>
  tables
    .selectFrom('contacts as c')
    .select(['c.id', 'c.name', 'c.email', 'c.title', 'c.role_type', 'c.deal_id', 'c.created_at']);

type DealRow = InferResult<ReturnType<typeof searchedDeals>>[number];
type ContactRow = InferResult<ReturnType<typeof searchedContacts>>[number];

/**
 * Both lists in one statement, each read as its table's size asks (`newestMatches`). A deal's stage and a
 * contact's deal are joined to the 20 rows found, as left joins (each row has its one: a required
 * reference, in the same organization).
 */
const searchBoth = (large: { deals: boolean; contacts: boolean }) =>
  orgQuery((db, a: { pattern: string; window: number }) =>
    db.selectNoFrom((eb) => [
      newestAsJson(
        eb
          .selectFrom(
            newestMatches<DealRow>(
              db,
              large.deals,
              'd',
              searchedDeals(),
              sql<SqlBool>`(d.title ilike ${a.pattern} or d.company_name ilike ${a.pattern})`,
              a.window,
            ).as('d'),
          )
          .leftJoin('pipeline_stages as s', 's.id', 'd.stage_id')
          .select([
            'd.id',
            'd.title',
            'd.company_name',
            's.name as stage',
            'd.value',
            'd.deal_health',
            'd.win_probability',
            'd.created_at',
          ]),
      ).as('deals'),
      newestAsJson(
        eb
          .selectFrom(
            newestMatches<ContactRow>(
              db,
              large.contacts,
              'c',
              searchedContacts(),
              contactMatches(a.pattern),
              a.window,
            ).as('c'),
          )
          .leftJoin('deals as d', 'd.id', 'c.deal_id')
          .select([
            'c.id',
            'c.name',
            'c.email',
            'c.title',
            'c.role_type',
            'c.deal_id',
            'd.title as deal_title',
            'd.company_name as company',
            'c.created_at',
          ]),
      ).as('contacts'),
    ]),
  );

/** The four statements, by which of the two tables is large (`deals/contacts`). */
const SEARCHES = new Map<string, ReturnType<typeof searchBoth>>(
  [false, true].flatMap((deals) =>
    [false, true].map((contacts) => [`${deals}/${contacts}`, searchBoth({ deals, contacts })] as const),
  ),
);

/** The organization's kept deal and contact counts. */
const keptSizes = orgQuery((db) =>
  db.selectNoFrom((eb) => [
    eb
      .selectFrom('deal_counts')
      .select((k) => k.fn.sum<string | null>('n').as('n'))
      .as('deals'),
    eb
      .selectFrom('contact_counts')
      .select((k) => k.fn.sum<string | null>('n').as('n'))
      .as('contacts'),
  ]),
);

const sizes = new LRUCache<string, { deals: number; contacts: number }>({ max: 10_000, ttl: SIZE_TTL_MS });

/** The organization's deal and contact counts, read at most once a minute per process. */
async function keptSize(em: EntityManager) {
  const org = currentOrg(em);
  const known = sizes.get(org);
  if (known) return known;
  const [row] = await keptSizes(em, {});
  const size = { deals: Number(row?.deals ?? 0), contacts: Number(row?.contacts ?? 0) };
  sizes.set(org, size);
  return size;
}

/** Which of the organization's deals and contacts a search reads as a large organization's (`newestMatches`). */
export async function largeTables(em: EntityManager, plainUpTo: number) {
  const size = await keptSize(em);
  return { deals: size.deals > plainUpTo, contacts: size.contacts > plainUpTo };
}

/**
 * Substring search, newest first. Rare terms are served by the trigram GIN indexes on (org_id, column);
 * common ones by walking the (org_id, created_at) index until the page is full. Up to `plainUpTo` rows a
 * table is searched with the plain query, the planner free to pick either; beyond, its `newestWindow`
 * newest rows first, as `newestMatches` says. Both lists in one statement: a round trip less (see docs/development.md, What made the difference).
 */
export async function search(
  em: EntityManager,
  q: string,
  { plainUpTo, newestWindow }: { plainUpTo: number; newestWindow: number },
) {
  const large = await largeTables(em, plainUpTo);
  const statement = SEARCHES.get(`${large.deals}/${large.contacts}`) as ReturnType<typeof searchBoth>;
  const [row] = await statement(em, { pattern: likePattern(q), window: newestWindow });
  const deals = asJson<Record<string, unknown>[]>(row?.deals ?? '[]');
  const contacts = asJson<Record<string, unknown>[]>(row?.contacts ?? '[]');
  return {
    deals: deals.map((d) => ({
      id: d.id as string,
      title: d.title as string,
      company_name: (d.company_name as string | null) ?? null,
      stage: (d.stage as string | null) ?? null,
      value: d.value == null ? null : Number(d.value),
      health: (d.deal_health as string | null) ?? null,
      win_probability: (d.win_probability as number | null) ?? null,
    })),
    contacts: contacts.map((c) => ({
      id: c.id as string,
      name: c.name as string,
      email: (c.email as string | null) ?? null,
      title: (c.title as string | null) ?? null,
      role_type: (c.role_type as string | null) ?? null,
      deal_id: (c.deal_id as string | null) ?? null,
      deal_title: (c.deal_title as string | null) ?? null,
      company: (c.company as string | null) ?? null,
    })),
  };
}
