import { type EntityManager, type FieldChanges, sqlOf, uuidv7 } from '@crm/db';
import { sql } from 'kysely';
import { changeValue, sameValue } from '../../activities.ts';
import type { AuthedContext } from '../../context.ts';
import { conflict, notFound } from '../../errors.ts';
import { emitEvent } from '../../events.ts';
import { lockForOrg, orgDb, orgQuery } from '../../org-scope.ts';
import { queryList } from '../../query/list.ts';
import { COMPANIES } from '../../query/objects.ts';
import { syncAnswer, syncedOf, syncList } from '../../query/sync.ts';
import { asJson, isoOf, numberOrNull } from '../../read-model.ts';
import { storedJson } from '../../stored-json.ts';
import { fieldRules } from '../custom-fields/custom-fields.service.ts';
import { customChanges, customValuesOf } from '../custom-fields/custom-values.ts';
import { companyMatches, likePattern, listByQ, pageByQ, wordsOf } from '../search/search.service.ts';
import { companyRows } from './company.queries.ts';
import {
  COMPANY_DETAIL_NEWEST,
  type CompanyCreateInput,
  type CompanyDto,
  type CompanyListQuery,
  type CompanyQueryBody,
  type CompanyUpdateInput,
} from './company.schemas.ts';

/** The one mapping from a stored company to the API's Company. */
function toCompanyDto(row: Record<string, unknown>): CompanyDto {
  return {
    id: row.id as string,
    name: row.name as string,
    domain: (row.domain as string | null) ?? null,
    industry: (row.industry as string | null) ?? null,
    size: (row.size as CompanyDto['size']) ?? null,
    website: (row.website as string | null) ?? null,
    created_at: row.created_at as string,
    updated_at: (row.updated_at as string | null) ?? null,
    custom: storedJson<Record<string, unknown> | null>(row.custom) ?? {},
  };
}

/** `q`'s matches as a list's condition (search's rules, search.service.ts), none without `q`. */
const qMatches = (q: string | undefined) => (q ? [companyMatches(likePattern(q), wordsOf(q))] : []);
const oneCompany = orgQuery((db, a: { id: string }) => companyRows(db).where('co.id', '=', a.id), {
  reusePlan: true,
});

/** The company as the API shows it (in the caller's transaction), or a 404. */
export async function companyDto(em: EntityManager, id: string): Promise<CompanyDto> {
  const [row] = await oneCompany(em, { id });
  if (!row) throw notFound('Company');
  return toCompanyDto(row);
}

/** The company's name, for a deal or contact being linked to it; a 404 naming the field when it is not there. */
export async function linkedCompany(em: EntityManager, id: string): Promise<{ id: string; name: string }> {
  const [row] = await oneCompany(em, { id });
  if (!row) throw notFound('Company');
  return { id: row.id, name: row.name };
}

/**
 * Holds the organization's `domain` while a write checks that nobody else holds it (a transaction-scoped
 * lock per organization and domain): two writers of one domain take turns, and the second gets the 409
 * naming the first, never the unique index's bare refusal.
 */
async function claimDomain(tx: EntityManager, domain: string, self?: string): Promise<void> {
  await lockForOrg(tx, `companies.domain:${domain}`);
  let holder = orgDb(tx).selectFrom('companies').select('id').where('domain', '=', domain);
  if (self) holder = holder.where('id', '<>', self);
  const held = await holder.executeTakeFirst();
  if (held) throw conflict(`domain: ${domain} is already the domain of company ${held.id}`, held.id);
}

/** Creates a company and emits `company.created`, in the caller's transaction. */
export async function createCompany(
  ctx: AuthedContext,
  em: EntityManager,
  input: CompanyCreateInput,
): Promise<CompanyDto> {
  const custom = customValuesOf(await fieldRules(em, 'companies'), 'companies', input.custom);
  if (input.domain) await claimDomain(em, input.domain);
  const id = uuidv7();
  await sqlOf(em)
    .insertInto('companies')
    .values({
      id,
      org_id: ctx.principal.orgId,
      name: input.name,
      domain: input.domain ?? null,
      industry: input.industry ?? null,
      size: input.size ?? null,
      website: input.website ?? null,
      custom: JSON.stringify(custom) as never,
      created_at: new Date(),
    })
    .execute();
  const company = await companyDto(em, id);
  await emitEvent(em, { type: 'company.created', data: company });
  return company;
}

const PLAIN_FIELDS = ['name', 'domain', 'industry', 'size', 'website'] as const;

/**
 * A PATCH of a company in the caller's transaction: the fields sent, `company.updated` with what changed,
 * and a new name carried to the deals whose `company_name` is the company's (`company_name_follows`).
 */
export async function updateCompany(
  em: EntityManager,
  id: string,
  input: CompanyUpdateInput,
): Promise<CompanyDto> {
  const current = await orgDb(em)
    .selectFrom('companies')
    .selectAll()
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
  if (!current) throw notFound('Company');
  const changes: FieldChanges = {};
  const set: Record<string, unknown> = {};
  for (const field of PLAIN_FIELDS) {
    const next = input[field];
    if (next === undefined || sameValue(current[field], next)) continue;
    changes[field] = { from: changeValue(current[field]), to: changeValue(next) };
    set[field] = next;
  }
  if (input.custom !== undefined) {
    const before = (current.custom as Record<string, unknown>) ?? {};
    const after = customValuesOf(await fieldRules(em, 'companies'), 'companies', input.custom, before);
    const changed = customChanges(before, after);
    if (Object.keys(changed).length > 0) {
      Object.assign(changes, changed);
      set.custom = JSON.stringify(after);
    }
  }
  if (Object.keys(changes).length === 0) return companyDto(em, id);
  if (typeof set.domain === 'string') await claimDomain(em, set.domain, id);
  await orgDb(em)
    .updateTable('companies')
    .set({ ...set, updated_at: new Date() })
    .where('id', '=', id)
    .execute();
  if (changes.name)
    await orgDb(em)
      .updateTable('deals')
      .set({ company_name: input.name as string })
      .where('company_id', '=', id)
      .where('company_name_follows', '=', true)
      .execute();
  const company = await companyDto(em, id);
  await emitEvent(em, { type: 'company.updated', data: company, changes });
  return company;
}

/**
 * Deletes a company: its deals and contacts stay, unlinked (the foreign keys set `company_id` to null); a
 * deal's `company_name` copied from it stays as the deal's own.
 */
export async function deleteCompany(em: EntityManager, id: string): Promise<void> {
  await orgDb(em)
    .updateTable('deals')
    .set({ company_name_follows: false })
    .where('company_id', '=', id)
    .where('company_name_follows', '=', true)
    .execute();
  const deleted = await orgDb(em).deleteFrom('companies').where('id', '=', id).executeTakeFirst();
  if (Number(deleted.numDeletedRows) === 0) throw notFound('Company');
}

/** The plain list's reads (`pageByQ`). */
const COMPANY_LIST = listByQ({
  table: 'companies',
  alias: 'co',
  what: 'company',
  rows: (db) => companyRows(db, true),
  matches: companyMatches,
  counts: 'company_counts',
  toDto: toCompanyDto,
});
const keptCompanyCount = COMPANY_LIST.keptCount;

/** The companies as a sync reads them (docs/api/sync.md). */
const SYNCED_COMPANIES = syncedOf('companies', () => COMPANIES);

/**
 * A page of companies, newest first, as `GET /contacts` pages contacts (the same totals and bounds); with
 * `filter`, `sort` or `view` (a saved view), through the filter language (docs/api/query.md), `q` ANDed
 * with the filter.
 */
export async function listCompanies(
  em: EntityManager,
  query: CompanyListQuery | CompanyQueryBody,
  granted: readonly string[],
  /** Search's configuration: how far a plain list of `q` walks (`pageByQ`). */
  search: { plainUpTo: number },
) {
  if (query.updated_since !== undefined) {
    const page = await syncList(
      em,
      SYNCED_COMPANIES,
      { ...query, updated_since: query.updated_since },
      { granted, where: qMatches(query.q) },
    );
    return { data: page.rows.map(toCompanyDto), ...syncAnswer(page, query.limit) };
  }
  if (query.filter !== undefined || query.sort !== undefined || query.view !== undefined) {
    const page = await queryList(em, COMPANIES, query, {
      granted,
      where: qMatches(query.q),
      keptTotal: query.q ? undefined : async () => Number((await keptCompanyCount(em, {}))[0]?.total ?? 0),
    });
    return {
      data: (page.rows as Record<string, unknown>[]).map(toCompanyDto),
      meta: { total: page.total, limit: query.limit, offset: query.offset, next_cursor: page.next_cursor },
    };
  }
  return pageByQ(em, COMPANY_LIST, query, search);
}

const companyLinks = orgQuery((db, a: { id: string; newest: number }) =>
  db.selectNoFrom((eb) => [
    eb
      .selectFrom('deals as d')
      .select((c) => c.fn.countAll<string>().as('n'))
      .where('d.company_id', '=', a.id)
      .as('deals'),
    eb
      .selectFrom('deals as d')
      .innerJoin('pipeline_stages as s', 's.id', 'd.stage_id')
      .select((c) => c.fn.countAll<string>().as('n'))
      .where('d.company_id', '=', a.id)
      .where('s.stage_type', '=', sql.lit('open'))
      .as('open_deals'),
    eb
      .selectFrom('contacts as c')
      .select((c) => c.fn.countAll<string>().as('n'))
      .where('c.company_id', '=', a.id)
      .as('contacts'),
    sql<unknown>`(select coalesce(json_agg(x order by x.created_at desc, x.id desc), '[]'::json) from ${eb
      .selectFrom('deals as d')
      .leftJoin('pipeline_stages as s', 's.id', 'd.stage_id')
      .select([
        'd.id',
        'd.title',
        'd.value',
        'd.currency',
        's.name as stage_name',
        's.stage_type',
        isoOf('d.created_at').as('created_at'),
      ])
      .where('d.company_id', '=', a.id)
      .orderBy('d.created_at', 'desc')
      .orderBy('d.id', 'desc')
      .limit(a.newest)
      .as('x')})`.as('newest_deals'),
    sql<unknown>`(select coalesce(json_agg(x order by x.created_at desc, x.id desc), '[]'::json) from ${eb
      .selectFrom('contacts as c')
      .select(['c.id', 'c.name', 'c.email', 'c.title', isoOf('c.created_at').as('created_at')])
      .where('c.company_id', '=', a.id)
      .orderBy('c.created_at', 'desc')
      .orderBy('c.id', 'desc')
      .limit(a.newest)
      .as('x')})`.as('newest_contacts'),
  ]),
);

/** The company with how many deals (open ones too) and contacts are linked to it, and the newest of each. */
export async function getCompanyDetail(em: EntityManager, id: string) {
  const [company, [links]] = await Promise.all([
    companyDto(em, id),
    companyLinks(em, { id, newest: COMPANY_DETAIL_NEWEST }),
  ]);
  const json = (v: unknown) => asJson<Record<string, unknown>[]>(v ?? '[]');
  return {
    ...company,
    counts: {
      deals: Number(links?.deals ?? 0),
      open_deals: Number(links?.open_deals ?? 0),
      contacts: Number(links?.contacts ?? 0),
    },
    deals: json(links?.newest_deals).map((d) => ({
      id: d.id as string,
      title: d.title as string,
      value: numberOrNull(d.value),
      currency: (d.currency as string | null) ?? null,
      stage_name: (d.stage_name as string | null) ?? null,
      stage_type: (d.stage_type as string | null) ?? null,
      created_at: d.created_at as string,
    })),
    contacts: json(links?.newest_contacts).map((c) => ({
      id: c.id as string,
      name: c.name as string,
      email: (c.email as string | null) ?? null,
      title: (c.title as string | null) ?? null,
      created_at: c.created_at as string,
    })),
  };
}
