import { type Orm, sqlOf, uuidv7 } from '@crm/db';
import { sql } from 'kysely';

/** Deliveries are inserted in chunks so that one statement stays well under PostgreSQL's parameter limit. */
const INSERT_CHUNK = 1_000;

/** Whether an event's record (`data`) meets an endpoint's filter plan for the event's kind. */
export type EventMatcher = (plan: unknown, data: Record<string, unknown>) => boolean;

/**
 * Fans committed outbox events out to `webhook_deliveries`: one per active endpoint of the event's
 * organization that subscribes to its type, existed when it happened and, when it has a filter, whose
 * plan for the type the event's `data` meets (`matches`; an event filtered out gets no delivery, so it is
 * neither sent nor a failure). Events are claimed with `FOR UPDATE SKIP LOCKED`, so any number of workers
 * can run this at once without doubling a delivery, and marked dispatched in the same transaction.
 * Returns how many events it took.
 */
export async function dispatchOutbox(orm: Orm, batchSize: number, matches: EventMatcher): Promise<number> {
  return orm.em.fork().transactional(async (em) => {
    const db = sqlOf(em);
    const events = await db
      .selectFrom('outbox_events')
      .select(['id', 'org_id', 'type', 'created_at'])
      .where('dispatched_at', 'is', null)
      .orderBy('created_at')
      .orderBy('id')
      .limit(batchSize)
      .forUpdate()
      .skipLocked()
      .execute();
    if (events.length === 0) return 0;

    const orgIds = [...new Set(events.map((e) => e.org_id))];
    const endpoints = await db
      .selectFrom('webhook_endpoints')
      .select(['id', 'org_id', 'events', 'created_at', 'filter_plan'])
      .where('org_id', 'in', orgIds)
      .where('is_active', '=', true)
      .execute();

    const subscribers = (event: (typeof events)[number]) =>
      endpoints.filter(
        (endpoint) =>
          endpoint.org_id === event.org_id &&
          (endpoint.events as readonly string[]).includes(event.type) &&
          new Date(endpoint.created_at) <= new Date(event.created_at),
      );
    const planOf = (endpoint: (typeof endpoints)[number], type: string): unknown => {
      const plans = endpoint.filter_plan as Record<string, unknown> | string | null;
      return (typeof plans === 'string' ? JSON.parse(plans) : plans)?.[type];
    };
    // Only the events a filtered endpoint subscribes to have their payload read (and parsed, once).
    const filtered = events.filter((e) => subscribers(e).some((endpoint) => planOf(endpoint, e.type)));
    const dataOf = new Map<string, Record<string, unknown>>();
    if (filtered.length > 0)
      for (const row of await db
        .selectFrom('outbox_events')
        .select(['id', 'payload'])
        .where(
          'id',
          'in',
          filtered.map((e) => e.id),
        )
        .execute())
        dataOf.set(row.id, (JSON.parse(row.payload) as { data?: Record<string, unknown> }).data ?? {});

    const now = new Date();
    const deliveries = events.flatMap((event) =>
      subscribers(event)
        .filter((endpoint) => {
          const plan = planOf(endpoint, event.type);
          if (!plan) return true;
          try {
            return matches(plan, dataOf.get(event.id) ?? {});
          } catch {
            // A plan the evaluator cannot read must not stop every endpoint's fan-out: the endpoint
            // subscribed to the kind, so it gets the event.
            return true;
          }
        })
        .map((endpoint) => ({
          id: uuidv7(),
          org_id: event.org_id,
          endpoint_id: endpoint.id,
          event_id: event.id,
          status: 'pending' as const,
          attempt_count: 0,
          // The database's clock, like every other queue time, so processes with skewed clocks agree.
          next_attempt_at: sql<Date>`now()`,
          created_at: now,
          updated_at: now,
        })),
    );
    for (let i = 0; i < deliveries.length; i += INSERT_CHUNK)
      await db
        .insertInto('webhook_deliveries')
        .values(deliveries.slice(i, i + INSERT_CHUNK))
        .execute();
    await db
      .updateTable('outbox_events')
      .set({ dispatched_at: now })
      .where(
        'id',
        'in',
        events.map((e) => e.id),
      )
      .execute();
    return events.length;
  });
}
