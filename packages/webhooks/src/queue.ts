import { type DeliveryStatus, type Orm, sqlOf, uuidv7 } from '@crm/db';
import { sql } from 'kysely';
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

/** What to claim: up to `limit` deliveries, leased for `leaseMs`, at most `perEndpoint` in flight per endpoint. */
export interface ClaimOptions {
  limit: number;
  leaseMs: number;
  perEndpoint: number;
}

/** A claimed row as the claim statement returns it. */
interface ClaimedRow {
  id: string;
  org_id: string;
  endpoint_id: string;
  event_id: string;
  url: string;
  secret: string;
  is_active: boolean;
  payload: string;
}

/** A claim made by the statement that records an attempt (see `recordSuccess`). */
interface HandOff {
  /**
   * The endpoint of the delivery the statement completes: that lease still counts in the statement's
   * snapshot, so the endpoint gets its slot back here.
   */
  freed: string;
  /** A common table expression of the same statement that has a row once the attempt is recorded. */
  after: string;
}

/**
 * The common table expressions that claim, ending in `claimed` (the claimed rows, with what an attempt
 * needs). Their cost does not grow with the backlog: the endpoints with pending deliveries are walked
 * with a skip scan, each offers its oldest due rows up to its room under the cap (leases that have not
 * run out, of every worker, count against it), and the oldest of those are taken and locked with
 * `FOR UPDATE SKIP LOCKED` (more are offered than taken, so rows another claim is locking at the same
 * moment are stepped over rather than leaving this one empty-handed). A long queue to one endpoint is
 * neither read nor in the way of another endpoint's deliveries.
 *
 * Claiming never waits for a lock, but it can keep one it does not use: a row that was leased after the
 * statement's snapshot is locked, found leased on the recheck and skipped, and stays locked until the
 * statement ends. So in a statement that also records an attempt (`handOff`), the claim waits for the
 * record (it starts only once `after` has its row): the record's locks, the endpoint's then its
 * delivery's, are all taken before any row is locked for the claim, and a statement waiting for an
 * endpoint holds nothing another one could be waiting for.
 */
function claimCtes(options: ClaimOptions, token: string, handOff?: HandOff) {
  return sql`
    endpoints (endpoint_id) as (
      (select endpoint_id from webhook_deliveries
       where status = 'pending'
         ${handOff === undefined ? sql`` : sql`and exists (select 1 from ${sql.table(handOff.after)})`}
       order by endpoint_id limit 1)
      union all
      select (select p.endpoint_id from webhook_deliveries p
              where p.status = 'pending' and p.endpoint_id > e.endpoint_id
              order by p.endpoint_id limit 1)
      from endpoints e where e.endpoint_id is not null
    ),
    room as (
      select e.endpoint_id,
             cast(${options.perEndpoint} as integer)
             - (select count(*) from webhook_deliveries l
                where l.endpoint_id = e.endpoint_id and l.status = 'pending'
                  and l.locked_until is not null and l.locked_until >= now())
             ${handOff === undefined ? sql`` : sql`+ case when e.endpoint_id = ${handOff.freed} then 1 else 0 end`}
             as free
      from endpoints e where e.endpoint_id is not null
    ),
    due as materialized (
      select c.id, c.next_attempt_at from room r
      cross join lateral (
        -- Ordered as webhook_deliveries_pending is, which answers it with no scan past the endpoint.
        select x.id, x.next_attempt_at from webhook_deliveries x
        where x.endpoint_id = r.endpoint_id and x.status = 'pending' and x.next_attempt_at <= now()
          and (x.locked_until is null or x.locked_until < now())
        order by x.endpoint_id, x.next_attempt_at
        limit greatest(r.free, 0)
      ) c
      order by c.next_attempt_at
      limit cast(${options.limit * options.perEndpoint} as integer)
    ),
    locked as (
      select d.id from due join webhook_deliveries d on d.id = due.id
      where d.status = 'pending' and d.next_attempt_at <= now()
        and (d.locked_until is null or d.locked_until < now())
      order by due.next_attempt_at
      limit cast(${options.limit} as integer)
      for update of d skip locked
    ),
    claimed as (
      update webhook_deliveries d
      set locked_until = ${later(options.leaseMs)}, locked_by = ${token}
      from webhook_endpoints e, outbox_events o
      where d.id in (select id from locked) and e.id = d.endpoint_id and o.id = d.event_id
      returning d.id, d.org_id, d.endpoint_id, d.event_id, e.url, e.secret, e.is_active, o.payload
    )`;
}

/**
 * The claimed rows as claims. A row whose endpoint was deactivated in the meantime is cancelled instead:
 * deactivation cancels what is queued, and this one was claimed in the same instant.
 */
async function settleClaims(orm: Orm, rows: ClaimedRow[], token: string): Promise<ClaimedDelivery[]> {
  const inactive = rows.filter((c) => !c.is_active).map((c) => c.id);
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
  return rows
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

/**
 * Claims up to `limit` due deliveries with a lease of `leaseMs`, in one statement (see `claimCtes`).
 * Rows are picked with `FOR UPDATE SKIP LOCKED`, so concurrent workers never claim the same one, and a
 * lease that runs out (its worker died) makes the row claimable again. An endpoint gets no more than
 * `perEndpoint` attempts in flight, counting every worker's leases, so one slow receiver cannot take
 * every slot.
 */
export async function claimDue(orm: Orm, options: ClaimOptions): Promise<ClaimedDelivery[]> {
  if (options.limit <= 0) return [];
  const token = uuidv7();
  const { rows } = await sql<ClaimedRow>`
    with recursive ${claimCtes(options, token)}
    select * from claimed`.execute(sqlOf(orm.em.fork()));
  return settleClaims(orm, rows, token);
}

export interface OutcomePolicy {
  retryDelayMs(failedAttempts: number, retryAfterMs: number | null): number | undefined;
  maxConsecutiveFailures: number;
}

export type RecordedOutcome = (
  | { recorded: false }
  | { recorded: true; status: DeliveryStatus; attempt: number; deactivated: boolean }
) & {
  /** Deliveries claimed in the same statement for the slot this attempt frees (see `handOff`). */
  next: ClaimedDelivery[];
};

/**
 * Records an attempt and its consequences in one transaction: the attempt row, the endpoint's
 * failure_count (consecutive; a success resets it), last_triggered_at, deactivation (after
 * `maxConsecutiveFailures` failures in a row, or at once on 410 Gone, which Standard Webhooks reads as
 * "stop sending"), and the delivery's next state. Nothing is written when the claim is no longer this
 * worker's (the endpoint was deleted, or the lease ran out and another worker took the delivery).
 * Locks are taken endpoint first, then delivery: the order an endpoint's cascading delete takes them.
 *
 * With `handOff`, a success also claims the next due deliveries (oldest first, whatever their endpoint,
 * under the same caps) in the same statement, so the worker's slot goes straight to the next attempt
 * without a claim of its own.
 */
export async function recordOutcome(
  orm: Orm,
  claim: ClaimedDelivery,
  outcome: AttemptOutcome,
  startedAt: Date,
  policy: OutcomePolicy,
  handOff?: ClaimOptions,
): Promise<RecordedOutcome> {
  if (outcome.succeeded) return recordSuccess(orm, claim, outcome, startedAt, handOff);
  const recorded = await orm.em.fork().transactional(async (em) => {
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
    if (!endpoint || !delivery) return { recorded: false } as const;

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
    return { recorded: true, status, attempt, deactivated } as const;
  });
  return { ...recorded, next: [] };
}

/**
 * `recordOutcome` for a success, which needs nothing read first: one statement instead of a transaction
 * of five, so the endpoint's row, which every attempt to the endpoint updates, is held for a moment.
 * The endpoint is updated (locked) first, as on the general path and as its cascading delete locks, and
 * only while the claim is still this worker's; `is_active` is left as it is. With `handOff`, the same
 * statement then claims for the slot (only when the attempt was recorded).
 */
async function recordSuccess(
  orm: Orm,
  claim: ClaimedDelivery,
  outcome: AttemptOutcome,
  startedAt: Date,
  handOff: ClaimOptions | undefined,
): Promise<RecordedOutcome> {
  const at = new Date();
  const token = uuidv7();
  const claiming = handOff !== undefined && handOff.limit > 0;
  const { rows } = await sql<{ attempt: number | null } & Partial<ClaimedRow>>`
    with recursive
    ended_endpoint as (
      update webhook_endpoints
      set failure_count = 0, last_triggered_at = ${startedAt}, updated_at = ${at}
      where id = ${claim.endpointId}
        and exists (select 1 from webhook_deliveries
                    where id = ${claim.id} and locked_by = ${claim.token} and status = 'pending')
      returning id
    ),
    ended as (
      update webhook_deliveries
      set status = 'succeeded', attempt_count = attempt_count + 1, next_attempt_at = null,
          locked_until = null, locked_by = null, updated_at = ${at}
      where id = ${claim.id} and locked_by = ${claim.token} and status = 'pending'
        and exists (select 1 from ended_endpoint)
      returning id, org_id, attempt_count
    ),
    attempt as (
      insert into webhook_attempts
        (id, org_id, delivery_id, attempt, created_at, duration_ms, response_status, error, response_body,
         succeeded)
      select ${uuidv7()}, ended.org_id, ended.id, ended.attempt_count, ${startedAt}, ${outcome.durationMs},
             ${outcome.status}, ${outcome.error}, ${outcome.responseBody}, true
      from ended
      returning attempt
    )
    ${claiming ? sql`, ${claimCtes(handOff, token, { freed: claim.endpointId, after: 'attempt' })}` : sql``}
    ${
      claiming
        ? sql`select (select attempt from attempt) as attempt, c.* from (select 1) as one left join claimed c on true`
        : sql`select (select attempt from attempt) as attempt`
    }`.execute(sqlOf(orm.em.fork()));
  const attempt = rows[0]?.attempt ?? null;
  const next = await settleClaims(
    orm,
    rows.filter((r): r is { attempt: number | null } & ClaimedRow => typeof r.id === 'string'),
    token,
  );
  return attempt === null
    ? { recorded: false, next }
    : { recorded: true, status: 'succeeded', attempt, deactivated: false, next };
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

/**
 * When the earliest pending delivery is due (now or past for one that waits on a lease or its endpoint's
 * cap); null with none pending. One entry of the `webhook_deliveries_due` index.
 */
export async function nextDueAt(orm: Orm): Promise<Date | null> {
  const row = await sqlOf(orm.em.fork())
    .selectFrom('webhook_deliveries')
    .select((eb) => eb.fn.min('next_attempt_at').as('due'))
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return row?.due ? new Date(row.due as Date | string) : null;
}
