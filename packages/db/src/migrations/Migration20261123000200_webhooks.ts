import { Migration } from '@mikro-orm/migrations';

/** Webhook endpoints, the deliveries the worker fans events out to, and every attempt made. */
export class Migration20261123000200_webhooks extends Migration {
  override name = 'Migration20261123000200_webhooks';

  override up(): void {
    this.addSql(`create table webhook_endpoints (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      url text not null,
      events text[] not null check (cardinality(events) > 0),
      secret text not null,
      is_active boolean not null default true,
      failure_count integer not null default 0 check (failure_count >= 0),
      last_triggered_at timestamptz null,
      created_at timestamptz not null,
      updated_at timestamptz null
    );`);
    this.addSql('create index webhook_endpoints_org on webhook_endpoints (org_id, created_at);');

    this.addSql(`create table webhook_deliveries (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      endpoint_id uuid not null references webhook_endpoints (id) on delete cascade,
      event_id uuid not null references outbox_events (id) on delete cascade,
      status text not null check (status in ('pending', 'succeeded', 'failed', 'cancelled')),
      attempt_count integer not null default 0,
      next_attempt_at timestamptz null,
      locked_until timestamptz null,
      locked_by uuid null,
      created_at timestamptz not null,
      updated_at timestamptz not null
    );`);
    // What the worker claims: due pending deliveries, oldest due first.
    this.addSql(
      "create index webhook_deliveries_due on webhook_deliveries (next_attempt_at) where status = 'pending';",
    );
    this.addSql(
      'create index webhook_deliveries_endpoint on webhook_deliveries (endpoint_id, created_at, id);',
    );
    this.addSql('create index webhook_deliveries_event on webhook_deliveries (event_id);');
    this.addSql('create index webhook_deliveries_updated_at on webhook_deliveries (updated_at);');

    this.addSql(`create table webhook_attempts (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      delivery_id uuid not null references webhook_deliveries (id) on delete cascade,
      attempt integer not null check (attempt >= 1),
      created_at timestamptz not null,
      duration_ms integer not null,
      response_status integer null,
      error text null,
      response_body text null,
      succeeded boolean not null,
      constraint webhook_attempts_once unique (delivery_id, attempt)
    );`);
    this.addSql('create index webhook_attempts_created_at on webhook_attempts (created_at);');
  }
}
