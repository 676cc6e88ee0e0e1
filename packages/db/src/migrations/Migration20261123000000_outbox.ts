import { Migration } from '@mikro-orm/migrations';

/** The transactional outbox the webhook worker delivers from (see `OutboxEvent`). */
export class Migration20261123000000_outbox extends Migration {
  override name = 'Migration20261123000000_outbox';

  override up(): void {
    this.addSql(`create table outbox_events (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      type text not null,
      data jsonb not null,
      created_at timestamptz not null
    );`);
    this.addSql('create index outbox_events_org_recent on outbox_events (org_id, created_at);');
  }
}
