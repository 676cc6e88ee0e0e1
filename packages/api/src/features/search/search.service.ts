import type { EntityManager } from '@crm/db';
import { type Expression, type SqlBool, sql } from 'kysely';
import { orgQuery } from '../../org-scope.ts';
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

/**
 * Each list newest first, at most SEARCH_LIMIT rows, as one json array (`[]` when none): `x`'s rows, the
 * subquery's columns as each object's keys.
 */
const newestAsJson = (rows: Expression<unknown>) =>
  sql`(select coalesce(json_agg(x order by x.created_at desc, x.id desc), '[]'::json) from ${rows} x)`;

/**
 * Both lists in one statement. The stage and the contact's deal are left joins, though each row has its
 * one (a required reference, in the same organization): the organization's condition the scope adds on
 * the joined table would, on an inner join, count against the estimated matches, and the planner would
 * then read and sort every match (or every deal of the organization, stage by stage) instead of walking
 * the (org_id, created_at) index until 20 match. A left join keeps the estimates, so the plans, of the
 * joins without that condition.
 */
const searchBoth = orgQuery((db, a: { pattern: string }) =>
  db.selectNoFrom((eb) => [
    newestAsJson(
      eb
        .selectFrom('deals as d')
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
        ])
        .where(sql<SqlBool>`(d.title ilike ${a.pattern} or d.company_name ilike ${a.pattern})`)
        .orderBy('d.created_at', 'desc')
        .orderBy('d.id', 'desc')
        .limit(sql.lit(SEARCH_LIMIT)),
    ).as('deals'),
    newestAsJson(
      eb
        .selectFrom('contacts as c')
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
        ])
        .where(contactMatches(a.pattern))
        .orderBy('c.created_at', 'desc')
        .orderBy('c.id', 'desc')
        .limit(sql.lit(SEARCH_LIMIT)),
    ).as('contacts'),
  ]),
);

/**
 * Substring search, newest first. Rare terms are served by the trigram GIN indexes on (org_id, column);
 * common ones by walking the (org_id, created_at) index until the page is full. No ranking expression,
 * so the planner is free to pick either.
 */
export async function search(em: EntityManager, q: string) {
  // Both lists in one statement: a round trip less (see README, Benchmark).
  const [row] = await searchBoth(em, { pattern: likePattern(q) });
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
