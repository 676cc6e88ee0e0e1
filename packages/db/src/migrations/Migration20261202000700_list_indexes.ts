import { Migration } from '@mikro-orm/migrations';

/**
 * Indexes for the filter and sort language's common lists at a million deals (issue 31, docs/api/query.md,
 * Speed): a value range or the biggest deals first (`sort=-value`), one owner's deals newest first, and
 * what changed lately (`sort=-updated_at`). Each is built in the direction its sort reads, empty values last
 * as the sort puts them. A unique custom field needs none: its values are claimed in
 * `custom_unique_values`, which the filter reads for `eq` and `in`.
 */
export class Migration20261202000700_list_indexes extends Migration {
  override name = 'Migration20261202000700_list_indexes';

  override up(): void {
    this.addSql('create index deals_org_value on deals (org_id, value desc nulls last, id desc);');
    this.addSql('create index deals_org_owner on deals (org_id, owner_name, created_at desc, id desc);');
    this.addSql('create index deals_org_updated on deals (org_id, updated_at desc nulls last, id desc);');
  }
}
