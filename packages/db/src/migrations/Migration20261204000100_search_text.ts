import { Migration } from '@mikro-orm/migrations';

/**
 * A trigram index of each deal's whole searched text (title and company name, as one text), which search
 * reads first for a term of several words: every match of every rule holds each of them as a substring of
 * that text, so "no row holds all of them" ends the search there (docs/development.md, issue 33). Two
 * words common apart and never together (`Hooli renewal` at a million deals) read the words index's
 * prefixes and both trigram indexes to the end for an empty answer (68-72 ms in the database); this read
 * answers in 24-35 ms. Its expression and search.service.ts's `DEAL_TEXT` are one text: the planner uses
 * the index only for the expression it was built on. Its pending list is held like the others'
 * (Migration20261204000000).
 */
export class Migration20261204000100_search_text extends Migration {
  override name = 'Migration20261204000100_search_text';

  override up(): void {
    this.addSql(
      `create index deals_search_text on deals using gin (org_id, (coalesce(title, '') || ' ' || coalesce(company_name, '')) gin_trgm_ops) with (gin_pending_list_limit = 256);`,
    );
    this.addSql('analyze deals;');
  }
}
