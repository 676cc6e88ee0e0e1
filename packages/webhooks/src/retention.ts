import { type Orm, sqlOf } from '@crm/db';
import { sql } from 'kysely';

export interface Pruned {
  attempts: number;
  deliveries: number;
  events: number;
}

/**
 * Deletes webhook history past the retention period: attempts made before it, finished deliveries last
 * touched before it, and dispatched events older than it and than the event feed's retention that no
 * delivery still refers to. A pending delivery and its event are never pruned.
 */
export async function pruneWebhookHistory(
  orm: Orm,
  retentionDays: number,
  eventsRetentionDays = retentionDays,
): Promise<Pruned> {
  const db = sqlOf(orm.em.fork());
  const cutoff = sql<Date>`now() - cast(${retentionDays} as integer) * interval '1 day'`;
  const eventsCutoff = sql<Date>`now() - cast(${Math.max(retentionDays, eventsRetentionDays)} as integer) * interval '1 day'`;
  const attempts = await db
    .deleteFrom('webhook_attempts')
    .where('created_at', '<', cutoff)
    .executeTakeFirst();
  const deliveries = await db
    .deleteFrom('webhook_deliveries')
    .where('status', '<>', 'pending')
    .where('updated_at', '<', cutoff)
    .executeTakeFirst();
  const events = await db
    .deleteFrom('outbox_events')
    .where('dispatched_at', 'is not', null)
    .where('created_at', '<', eventsCutoff)
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('webhook_deliveries')
            .select('webhook_deliveries.id')
            .whereRef('webhook_deliveries.event_id', '=', 'outbox_events.id'),
        ),
      ),
    )
    .executeTakeFirst();
  return {
    attempts: Number(attempts.numDeletedRows),
    deliveries: Number(deliveries.numDeletedRows),
    events: Number(events.numDeletedRows),
  };
}
