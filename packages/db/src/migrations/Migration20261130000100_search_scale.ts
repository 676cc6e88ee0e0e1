import { Migration } from '@mikro-orm/migrations';

/**
 * Search at any size (issue 33; docs/api/lists-and-search.md: Search).
 *
 * Relevance puts a title, company name or contact name that is the term, or begins with it, first. Those
 * matches are read in order down these btree indexes: the lower-cased value in byte order (`collate "C"`,
 * so a prefix is one range), then newest first. A page of them is 20 index entries, whatever the
 * organization's size and however common the term (a company name held by thousands of deals). The
 * matches inside a value are still found by the trigram indexes of the first migration.
 */
export class Migration20261130000100_search_scale extends Migration {
  override name = 'Migration20261130000100_search_scale';

  override up(): void {
    this.addSql(
      'create index deals_title_prefix on deals (org_id, (lower(title) collate "C"), created_at desc, id desc);',
    );
    this.addSql(
      'create index deals_company_prefix on deals (org_id, (lower(company_name) collate "C"), created_at desc, id desc);',
    );
    this.addSql(
      'create index contacts_name_prefix on contacts (org_id, (lower(name) collate "C"), created_at desc, id desc);',
    );
    this.addSql('analyze deals, contacts;');
  }
}
