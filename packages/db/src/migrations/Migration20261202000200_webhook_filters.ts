import { Migration } from '@mikro-orm/migrations';

/**
 * A webhook's filter (issue 31, docs/api/webhooks.md#filters): `filter` as the client sent it (shown
 * back), `filter_plan` the same checked against the record of each subscribed kind, by kind, as the
 * worker evaluates it when it fans events out (it has no organization's field definitions at hand).
 */
export class Migration20261202000200_webhook_filters extends Migration {
  override name = 'Migration20261202000200_webhook_filters';

  override up(): void {
    this.addSql(
      'alter table webhook_endpoints add column filter jsonb null, add column filter_plan jsonb null;',
    );
  }
}
