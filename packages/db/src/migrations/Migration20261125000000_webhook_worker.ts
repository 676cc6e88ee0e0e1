import { Migration } from '@mikro-orm/migrations';

/**
 * What lets a webhook worker keep up with a busy endpoint (docs/api/webhooks.md: Workers; Throughput and wake-ups).
 *
 * Wake-ups: a statement that inserts outbox events sends `events` on the `crm_webhooks` channel, one
 * that inserts deliveries (a replay, a test event, a worker's fan-out, which wakes the other workers too)
 * sends `deliveries`. PostgreSQL delivers a notification when its transaction commits, and not at all
 * when it rolls back; identical ones of a transaction are folded into one. Workers LISTEN on the channel
 * (PGlite too, in-process) and poll only as a fallback.
 *
 * Claims that cost the same whatever the backlog: pending deliveries by endpoint, oldest due first (for
 * a skip scan over the endpoints with pending deliveries, and each one's oldest due rows), and the leased
 * ones alone (to count attempts in flight per endpoint).
 */
export class Migration20261125000000_webhook_worker extends Migration {
  override name = 'Migration20261125000000_webhook_worker';

  override up(): void {
    this.addSql(`create function crm_webhooks_wakeup() returns trigger language plpgsql as $$
    begin
      perform pg_notify('crm_webhooks', tg_argv[0]);
      return null;
    end
    $$;`);
    this.addSql(`create trigger outbox_events_wakeup after insert on outbox_events
      for each statement execute function crm_webhooks_wakeup('events');`);
    this.addSql(`create trigger webhook_deliveries_wakeup after insert on webhook_deliveries
      for each statement execute function crm_webhooks_wakeup('deliveries');`);

    this.addSql(
      "create index webhook_deliveries_pending on webhook_deliveries (endpoint_id, next_attempt_at) where status = 'pending';",
    );
    this.addSql(
      "create index webhook_deliveries_leased on webhook_deliveries (endpoint_id) where status = 'pending' and locked_until is not null;",
    );
  }
}
