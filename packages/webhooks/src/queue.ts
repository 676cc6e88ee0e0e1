import { type DeliveryStatus, type Orm, sqlOf } from '@crm/db';
import { sql } from 'kysely';
import { uuidv7 } from 'uuidv7';
import type { AttemptOutcome } from './transport.ts';

/** A delivery a worker holds a lease on, with what it needs to make the attempt. */
export interface ClaimedDelivery {
  id: string;
  orgId: string;
  endpointId: string;
  /** The event's id: the `webhook-id` of every attempt, to every endpoint. */
  eventId: string;
  url: string;
  /** The secret as stored (see `openSecret`). */
  secret: string;
  payload: string;
  /** Identifies this claim: only its holder may record the outcome or release it. */
  token: string;
}

const later = (ms: number) =>
  sql<Date>`now() + cast(${Math.round(ms)} as integer) * interval '1 millisecond'`;
const now = sql<Date>`now()`;

/**
 * Claims up to `limit` due deliveries with a lease of `leaseMs`. Rows are picked with
 * `FOR UPDATE SKIP LOCKED`, so concurrent workers never claim the same one, and a lease that runs out
 * (its worker died) makes the row claimable again. Endpoints that already have `perEndpoint` attempts
 * in flight are passed over, so one slow receiver cannot take every slot.
 */
export async function claimDue(
  orm: Orm,
  options: { limit: number; leaseMs: number; perEndpoint: number },
): Promise<ClaimedDelivery[]> {
  const token = uuidv7();
  const claimed = await orm.em.fork().transactional(async (em) => {
    const db = sqlOf(em);
    const busy = db
      .selectFrom('webhook_deliveries')
      .select('endpoint_id')
      .where('status', '=', 'pending')
      .where('locked_until', '>=', now)
      .groupBy('endpoint_id')
      .having((eb) => eb.fn.countAll(), '>=', options.perEndpoint);
    const candidates = await db
      .selectFrom('webhook_deliveries')
      .select(['id', 'endpoint_id'])
      .where('status', '=', 'pending')
      .where('next_attempt_at', '<=', now)
      .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', now)]))
      .where('endpoint_id', 'not in', busy)
      .orderBy('next_attempt_at')
      .limit(options.limit * 4)
      .forUpdate()
      .skipLocked()
      .execute();
    if (candidates.length === 0) return [];

    const inFlight = new Map<string, number>();
    const chosen: string[] = [];
    const counts = await db
      .selectFrom('webhook_deliveries')
      .select(['endpoint_id', (eb) => eb.fn.countAll<string>().as('n')])
      .where('status', '=', 'pending')
      .where('locked_until', '>=', now)
      .where('endpoint_id', 'in', [...new Set(candidates.map((c) => c.endpoint_id))])
      .groupBy('endpoint_id')
      .execute();
    for (const c of counts) inFlight.set(c.endpoint_id, Number(c.n));
    for (const candidate of candidates) {
      const n = inFlight.get(candidate.endpoint_id) ?? 0;
      if (n >= options.perEndpoint) continue;
      inFlight.set(candidate.endpoint_id, n + 1);
      chosen.push(candidate.id);
      if (chosen.length === options.limit) break;
    }
    await db
      .updateTable('webhook_deliveries')
      .set({ locked_until: later(options.leaseMs), locked_by: token })
      .where('id', 'in', chosen)
      .execute();
    return db
      .selectFrom('webhook_deliveries as d')
      .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
      .innerJoin('outbox_events as o', 'o.id', 'd.event_id')
      .select([
        'd.id',
        'd.org_id',
        'd.endpoint_id',
        'd.event_id',
        'e.url',
        'e.secret',
        'e.is_active',
        'o.payload',
      ])
      .where('d.id', 'in', chosen)
      .execute();
  });

  const inactive = claimed.filter((c) => !c.is_active).map((c) => c.id);
  // Deactivation cancels what is queued; a row claimed in the same instant is cancelled here instead.
  if (inactive.length > 0)
    await sqlOf(orm.em.fork())
      .updateTable('webhook_deliveries')
      .set({
        status: 'cancelled',
        next_attempt_at: null,
        locked_until: null,
        locked_by: null,
        updated_at: new Date(),
      })
      .where('id', 'in', inactive)
      .where('locked_by', '=', token)
      .execute();
  return claimed
    .filter((c) => c.is_active)
    .map((c) => ({
      id: c.id,
      orgId: c.org_id,
      endpointId: c.endpoint_id,
      eventId: c.event_id,
      url: c.url,
      secret: c.secret,
      payload: c.payload,
      token,
    }));
}

export interface OutcomePolicy {
  retryDelayMs(failedAttempts: number, retryAfterMs: number | null): number | undefined;
  maxConsecutiveFailures: number;
}

export type RecordedOutcome =
  | { recorded: false }
  | { recorded: true; status: DeliveryStatus; attempt: number; deactivated: boolean };

/**
 * Records an attempt and its consequences in one transaction: the attempt row, the endpoint's
 * failure_count (consecutive; a success resets it), last_triggered_at, deactivation (after
 * `maxConsecutiveFailures` failures in a row, or at once on 410 Gone, which Standard Webhooks reads as
 * "stop sending"), and the delivery's next state. Nothing is written when the claim is no longer this
 * worker's (the endpoint was deleted, or the lease ran out and another worker took the delivery).
 * Locks are taken endpoint first, then delivery: the order an endpoint's cascading delete takes them.
 */
export async function recordOutcome(
  orm: Orm,
  claim: ClaimedDelivery,
  outcome: AttemptOutcome,
  startedAt: Date,
  policy: OutcomePolicy,
): Promise<RecordedOutcome> {
  return orm.em.fork().transactional(async (em) => {
    const db = sqlOf(em);
    const endpoint = await db
      .selectFrom('webhook_endpoints')
      .select(['id', 'failure_count', 'is_active'])
      .where('id', '=', claim.endpointId)
      .forNoKeyUpdate()
      .executeTakeFirst();
    const delivery = await db
      .selectFrom('webhook_deliveries')
      .select(['attempt_count'])
      .where('id', '=', claim.id)
      .where('locked_by', '=', claim.token)
      .where('status', '=', 'pending')
      .forUpdate()
      .executeTakeFirst();
    if (!endpoint || !delivery) return { recorded: false };

    const attempt = delivery.attempt_count + 1;
    const failureCount = outcome.succeeded ? 0 : endpoint.failure_count + 1;
    const deactivated =
      endpoint.is_active &&
      !outcome.succeeded &&
      (outcome.status === 410 || failureCount >= policy.maxConsecutiveFailures);
    const isActive = endpoint.is_active && !deactivated;
    const at = new Date();
    await db
      .updateTable('webhook_endpoints')
      .set({ failure_count: failureCount, last_triggered_at: startedAt, is_active: isActive, updated_at: at })
      .where('id', '=', endpoint.id)
      .execute();
    await db
      .insertInto('webhook_attempts')
      .values({
        id: uuidv7(),
        org_id: claim.orgId,
        delivery_id: claim.id,
        attempt,
        created_at: startedAt,
        duration_ms: outcome.durationMs,
        response_status: outcome.status,
        error: outcome.error,
        response_body: outcome.responseBody,
        succeeded: outcome.succeeded,
      })
      .execute();

    let status: DeliveryStatus = 'succeeded';
    let delay: number | undefined;
    if (!outcome.succeeded) {
      delay = isActive ? policy.retryDelayMs(attempt, outcome.retryAfterMs) : undefined;
      status = !isActive ? 'cancelled' : delay === undefined ? 'failed' : 'pending';
    }
    await db
      .updateTable('webhook_deliveries')
      .set({
        status,
        attempt_count: attempt,
        next_attempt_at: delay === undefined ? null : later(delay),
        locked_until: null,
        locked_by: null,
        updated_at: at,
      })
      .where('id', '=', claim.id)
      .execute();
    if (deactivated)
      // Queued deliveries stop here; ones in flight elsewhere are cancelled when they report back.
      await db
        .updateTable('webhook_deliveries')
        .set({ status: 'cancelled', next_attempt_at: null, updated_at: at })
        .where('endpoint_id', '=', endpoint.id)
        .where('status', '=', 'pending')
        .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', now)]))
        .execute();
    return { recorded: true, status, attempt, deactivated };
  });
}

/** Gives a claim back without an attempt (the worker is stopping): the next pass, here or elsewhere, takes it. */
export async function releaseClaim(orm: Orm, claim: Pick<ClaimedDelivery, 'id' | 'token'>): Promise<void> {
  await sqlOf(orm.em.fork())
    .updateTable('webhook_deliveries')
    .set({ locked_until: null, locked_by: null })
    .where('id', '=', claim.id)
    .where('locked_by', '=', claim.token)
    .execute();
}

/**
 * Releases every lease at once. Only for the sole worker of a database (embedded mode): any lease it
 * finds was left by a process that died, and waiting for it to run out would only delay delivery.
 */
export async function releaseAllClaims(orm: Orm): Promise<number> {
  const result = await sqlOf(orm.em.fork())
    .updateTable('webhook_deliveries')
    .set({ locked_until: null, locked_by: null })
    .where('locked_until', 'is not', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
