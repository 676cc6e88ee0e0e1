import { type Deal, type EntityManager, type FieldChanges, sqlOf, uuidv7 } from '@crm/db';

export type ActivityType =
  | 'deal_created'
  | 'deal_updated'
  | 'stage_changed'
  | 'contact_added'
  | 'contact_updated'
  | 'stakeholder_added'
  | 'stakeholder_removed'
  | 'deal_analyzed';

/**
 * Records what a mutation did, in the caller's transaction, and moves the deal's last_activity_at (a
 * managed deal is updated when the unit of work flushes; a deal being inserted carries the same time).
 * Every mutation goes through here, so the deal's history and its activity clock cannot drift apart.
 * Activities are append-only, so they are inserted directly rather than tracked by the unit of work.
 */
export async function recordActivity(
  em: EntityManager,
  deal: Pick<Deal, 'id' | 'orgId'> & { lastActivityAt?: Date | null },
  entry: ActivityEntry,
  at: Date = new Date(),
): Promise<void> {
  await sqlOf(em)
    .insertInto('activities')
    .values(activityRow(deal, entry, at))
    .execute();
  deal.lastActivityAt = at;
}

export interface ActivityEntry {
  type: ActivityType;
  description: string;
  changes?: FieldChanges;
  contactId?: string;
}

/**
 * The row `recordActivity` inserts: for a write that puts its activity in its own statement (a create),
 * so that every door records the same row by the same code.
 */
export function activityRow(deal: Pick<Deal, 'id' | 'orgId'>, entry: ActivityEntry, at: Date) {
  return {
    id: uuidv7(),
    created_at: at,
    org_id: deal.orgId,
    deal_id: deal.id,
    contact_id: entry.contactId ?? null,
    type: entry.type,
    description: entry.description,
    changes: entry.changes ?? null,
  };
}

/** Compares plain values the way a client would: dates by instant, everything else by value. */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a instanceof Date || b instanceof Date) {
    const ta = a instanceof Date ? a.getTime() : a == null ? null : new Date(a as string).getTime();
    const tb = b instanceof Date ? b.getTime() : b == null ? null : new Date(b as string).getTime();
    return ta === tb;
  }
  return (a ?? null) === (b ?? null);
}

/** JSON-safe copy of a value for the changes log. */
export function changeValue(v: unknown): unknown {
  return v instanceof Date ? v.toISOString() : (v ?? null);
}
