import { Migration } from '@mikro-orm/migrations';

/**
 * Scoped, expiring, rotatable API keys, and the event feed (docs/api/keys.md; docs/api/events.md).
 *
 * Keys: `scopes` (the operations a key may call; `{*}`, every one, for the keys there were), an optional
 * `expires_at`, and `replaced_by` (the successor a rotation issued).
 *
 * Events: the outbox is the feed. Each event gets its place in it (`position`) only once it is committed,
 * from a sequence, by one sequencer at a time (an advisory lock): so positions grow in the order events
 * became visible, and a reader who has passed a position never finds a new event behind it, whatever
 * order their transactions started or took ids and timestamps in. Who made the change (`actor`) and the
 * request (`request_id`) are kept beside it.
 */
export class Migration20261126000000_scoped_keys_events extends Migration {
  override name = 'Migration20261126000000_scoped_keys_events';

  override up(): void {
    this.addSql(`alter table api_keys add column scopes text[] not null default '{*}',
      add column expires_at timestamptz null,
      add column replaced_by uuid null;`);

    this.addSql('create sequence outbox_events_position;');
    this.addSql(`alter table outbox_events add column position bigint null,
      add column actor jsonb null,
      add column request_id text null;`);
    // What the sequencer has left to place, and each organization's feed in order.
    this.addSql(
      'create index outbox_events_unplaced on outbox_events (created_at, id) where position is null;',
    );
    this.addSql('create unique index outbox_events_feed on outbox_events (org_id, position);');
  }
}
