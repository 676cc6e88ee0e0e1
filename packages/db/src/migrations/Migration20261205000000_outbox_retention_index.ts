import { Migration } from '@mikro-orm/migrations';

/**
 * Retention's index of the outbox holds dispatched events only: retention prunes none other
 * (`pruneWebhookHistory`). Over every event it also served the dispatcher's ordered poll, and the planner
 * took it when its statistics still counted a large import's events as undispatched (autoanalyze waits
 * for a tenth of the table to change): the poll then read every dispatched event's row before the first
 * undispatched one. After an import of a million deals (4 million events) each poll of 200 took 1-2 s and
 * kept a core busy, 200 events a second, hours to drain; over the undispatched index alone, 10 ms once its
 * dead entries are marked (docs/development.md, The outbox after a large import).
 */
export class Migration20261205000000_outbox_retention_index extends Migration {
  override name = 'Migration20261205000000_outbox_retention_index';

  override up(): void {
    this.addSql('drop index if exists outbox_events_created_at;');
    this.addSql(
      'create index outbox_events_dispatched on outbox_events (created_at) where dispatched_at is not null;',
    );
  }
}
