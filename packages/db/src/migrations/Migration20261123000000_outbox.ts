import { Migration } from '@mikro-orm/migrations';

/** The transactional outbox the webhook worker delivers from (see `OutboxEvent`). */
export class Migration20261123000000_outbox extends Migration {
  override name = 'Migration20261123000000_outbox';

  override up(): void {
    this.addSql(`create table outbox_events (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      type text not null,
      payload text not null,
      created_at timestamptz not null,
      dispatched_at timestamptz null
    );`);
    // The worker's queue: small, because dispatched rows leave it at once.
    this.addSql(
      'create index outbox_events_undispatched on outbox_events (created_at, id) where dispatched_at is null;',
    );
    // Retention prunes by age.
    this.addSql('create index outbox_events_created_at on outbox_events (created_at);');
  }
}
