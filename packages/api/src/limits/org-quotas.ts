import type { Config } from '@crm/config';
import { type EntityManager, sqlOf } from '@crm/db';
import { organizationExists } from '../admin/organizations.ts';
import { orgDb, orgFork } from '../org-scope.ts';
import { periodOf } from './period.ts';

/** What `crm org quota` shows: each quota's limit this month, whether it is the organization's own, and the stored use. */
export interface OrgQuotaReport {
  org_id: string;
  period: string;
  api_calls: { limit: number; own: boolean; used: number };
  ai_calls: { limit: number; own: boolean; used: number };
}

/** `undefined` leaves a quota as it is; `null` hands it back to the configured default. */
export interface QuotaChange {
  api_calls?: number | null;
  ai_calls?: number | null;
}

export class UnknownOrganizationError extends Error {
  override name = 'UnknownOrganizationError';
}

async function requireOrganization(em: EntityManager, orgId: string): Promise<void> {
  if (!(await organizationExists(em, orgId)))
    throw new UnknownOrganizationError(`organization ${orgId} does not exist`);
}

/** Sets an organization's own monthly quotas. Running servers pick the change up within a few seconds. */
export async function setOrgQuota(em: EntityManager, orgId: string, change: QuotaChange): Promise<void> {
  await requireOrganization(em, orgId);
  const set: { api_calls_per_month?: number | null; ai_calls_per_month?: number | null } = {};
  if (change.api_calls !== undefined) set.api_calls_per_month = change.api_calls;
  if (change.ai_calls !== undefined) set.ai_calls_per_month = change.ai_calls;
  const now = new Date();
  await sqlOf(em)
    .insertInto('organization_quotas')
    .values({
      org_id: orgId,
      api_calls_per_month: set.api_calls_per_month ?? null,
      ai_calls_per_month: set.ai_calls_per_month ?? null,
      updated_at: now,
    })
    .onConflict((oc) => oc.column('org_id').doUpdateSet({ ...set, updated_at: now }))
    .execute();
}

/**
 * An organization's quotas for this month and what is stored of their use (the database lags the live
 * counters by at most one flush interval of a running server).
 */
export async function orgQuotaReport(
  em: EntityManager,
  orgId: string,
  defaults: Config['limits']['monthlyQuota'],
  now: Date = new Date(),
): Promise<OrgQuotaReport> {
  await requireOrganization(em, orgId);
  const period = periodOf(now).key;
  const db = orgDb(orgFork(em, orgId));
  const own = await db
    .selectFrom('organization_quotas')
    .select(['api_calls_per_month', 'ai_calls_per_month'])
    .executeTakeFirst();
  const counts = await db
    .selectFrom('usage_counters')
    .select(['quota', 'used'])
    .where('period', '=', period)
    .execute();
  const used = (quota: string) => Number(counts.find((c) => c.quota === quota)?.used ?? 0);
  const entry = (value: unknown, fallback: number, quota: string) => ({
    limit: value == null ? fallback : Number(value),
    own: value != null,
    used: used(quota),
  });
  return {
    org_id: orgId,
    period,
    api_calls: entry(own?.api_calls_per_month, defaults.api, 'api_calls'),
    ai_calls: entry(own?.ai_calls_per_month, defaults.ai, 'ai_calls'),
  };
}
