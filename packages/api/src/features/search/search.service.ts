import type { EntityManager } from '@crm/db';
import { currentOrg } from '../../org-scope.ts';
import { asJson, orgRows } from '../../read-model.ts';

/** How many deals and how many contacts one search returns at most. */
export const SEARCH_LIMIT = 20;

/** `%q%` with LIKE's own wildcards escaped, so "50%" finds "50%" and not everything. */
export function likePattern(q: string): string {
  return `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * Substring search, newest first. Rare terms are served by the trigram GIN indexes on (org_id, column);
 * common ones by walking the (org_id, created_at) index until the page is full. No ranking expression,
 * so the planner is free to pick either.
 */
export async function search(em: EntityManager, q: string) {
  const pattern = likePattern(q);
  // Both lists in one statement: a round trip less (see README, Benchmark).
  const [row] = await orgRows<{ deals: unknown; contacts: unknown }>(
    em,
    `select
       (select coalesce(json_agg(x order by x.created_at desc, x.id desc), '[]'::json) from (
          select d.id, d.title, d.company_name, s.name as stage, d.value, d.deal_health, d.win_probability, d.created_at
            from deals d join pipeline_stages s on s.id = d.stage_id
           where d.org_id = ? and (d.title ilike ? or d.company_name ilike ?)
           order by d.created_at desc, d.id desc
           limit ${SEARCH_LIMIT}) x) as deals,
       (select coalesce(json_agg(y order by y.created_at desc, y.id desc), '[]'::json) from (
          select c.id, c.name, c.email, c.title, c.role_type, c.deal_id, d.title as deal_title, d.company_name as company,
                 c.created_at
            from contacts c join deals d on d.id = c.deal_id
           where c.org_id = ? and (c.name ilike ? or c.email ilike ? or c.title ilike ?)
           order by c.created_at desc, c.id desc
           limit ${SEARCH_LIMIT}) y) as contacts`,
    [pattern, pattern, currentOrg(em), pattern, pattern, pattern],
  );
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
