import {
  type EntityManager,
  Organization,
  Pipeline,
  PipelineStage,
  type StageType,
  transaction,
} from '@crm/db';
import { currentOrg, orgDb, orgFork, unscopedDb } from '../org-scope.ts';
import { forgetLookedUpKeys, type IssuedKey, issueApiKey } from './api-keys.ts';

/** The stages every new organization starts with; docs/api/deals.md (Pipeline) says what each means. */
export const DEFAULT_STAGES: ReadonlyArray<{
  name: string;
  stageType: StageType;
  color: string;
  probability: number;
}> = [
  { name: 'Lead', stageType: 'open', color: '#94a3b8', probability: 10 },
  { name: 'Qualified', stageType: 'open', color: '#3b82f6', probability: 25 },
  { name: 'Proposal', stageType: 'open', color: '#8b5cf6', probability: 50 },
  { name: 'Negotiation', stageType: 'open', color: '#f59e0b', probability: 75 },
  { name: 'Closed Won', stageType: 'won', color: '#22c55e', probability: 100 },
  { name: 'Closed Lost', stageType: 'lost', color: '#ef4444', probability: 0 },
];

export async function createOrganization(em: EntityManager, name: string): Promise<Organization> {
  return em.transactional(async (tx) => {
    const org = tx.create(Organization, { name });
    // org_id is a plain column, so the unit of work cannot order this insert first by itself.
    await tx.flush();
    const pipeline = tx.create(Pipeline, { orgId: org.id, name: 'Sales pipeline', isDefault: true });
    DEFAULT_STAGES.forEach((stage, index) => {
      tx.create(PipelineStage, { orgId: org.id, pipeline, position: index + 1, ...stage });
    });
    return org;
  });
}

/** An organization with its first API key, as `crm org create` prints it. */
export async function createOrganizationWithKey(
  em: EntityManager,
  name: string,
  acting?: { actor: string },
): Promise<{ org_id: string } & IssuedKey> {
  const org = await createOrganization(em, name);
  const key = await issueApiKey(em, org.id, { name: 'default' }, acting);
  return { org_id: org.id, ...key };
}

/** Every organization, oldest first (`crm org list`). */
export async function listOrganizations(
  em: EntityManager,
): Promise<Array<{ org_id: string; name: string; created_at: string }>> {
  const orgs = await unscopedDb(em, 'crm org list: every organization')
    .selectFrom('organizations')
    .select(['id', 'name', 'created_at'])
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return orgs.map((o) => ({ org_id: o.id, name: o.name, created_at: new Date(o.created_at).toISOString() }));
}

/** Whether any organization exists (the first start makes one when none does). */
export async function anyOrganizationExists(em: EntityManager): Promise<boolean> {
  const org = await unscopedDb(em, 'first start: whether any organization exists yet')
    .selectFrom('organizations')
    .select('id')
    .limit(1)
    .executeTakeFirst();
  return org !== undefined;
}

/** Whether the organization a caller names (`--org`, a new key's or person's) exists. */
export async function organizationExists(em: EntityManager, orgId: string): Promise<boolean> {
  const org = await unscopedDb(
    em,
    'whether the organization a caller names exists (organizations has no org_id)',
  )
    .selectFrom('organizations')
    .select('id')
    .where('id', '=', orgId)
    .executeTakeFirst();
  return org !== undefined;
}

/** The name of the organization `em` is scoped to. */
export async function organizationName(em: EntityManager): Promise<string> {
  const org = await orgDb(em)
    .selectFrom('organizations')
    .select('name')
    .where('id', '=', currentOrg(em))
    .executeTakeFirst();
  return org?.name ?? '';
}

/** The tables the database keeps per organization from its rows (docs/api/lists-and-search.md: Lists; docs/api/analytics.md: Analytics at scale). */
export const KEPT_AGGREGATES = [
  'deal_counts',
  'contact_counts',
  'company_counts',
  'activity_signal_hours',
  'deal_close_days',
] as const;

/**
 * Deletes an organization with everything it holds (deals, contacts, keys, people, webhooks, events,
 * usage: every table's rows cascade from it). Its keys stop working at the next request on this process,
 * within KEY_CACHE_TTL_MS on every other instance. Returns false when there is no such organization.
 */
export async function deleteOrganization(em: EntityManager, orgId: string): Promise<boolean> {
  try {
    return await transaction(em, async (tx) => {
      // The analytics triggers stand aside while the organization's rows go (its sums are deleted below).
      await tx.execute("select set_config('crm.deleting_org', ?, true)", [orgId]);
      const deleted = await unscopedDb(tx, 'crm org delete: the organization itself (its rows cascade)')
        .deleteFrom('organizations')
        .where('id', '=', orgId)
        .returning('id')
        .executeTakeFirst();
      // Only for this delete: anything else the transaction writes is counted as usual.
      await tx.execute("select set_config('crm.deleting_org', '', true)");
      // The kept counts and sums have no foreign key (the cascade's triggers wrote the counts while the rows went).
      const own = orgDb(orgFork(tx, orgId));
      for (const table of KEPT_AGGREGATES) await own.deleteFrom(table).execute();
      return deleted !== undefined;
    });
  } finally {
    // Also when the commit's answer was lost: forgetting too much costs a lookup.
    forgetLookedUpKeys();
  }
}
