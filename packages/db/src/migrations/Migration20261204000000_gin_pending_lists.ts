import { Migration } from '@mikro-orm/migrations';

/** Every GIN index of the schema: search's trigram and words indexes (docs/development.md, issue 33). */
export const GIN_INDEXES = [
  'deals_title_trgm',
  'deals_company_trgm',
  'deals_search_words',
  'contacts_name_trgm',
  'contacts_email_trgm',
  'contacts_title_trgm',
  'contacts_search_words',
  'companies_name_trgm',
  'companies_domain_trgm',
  'companies_search_words',
];

/**
 * Search's GIN indexes keep new entries in a pending list of at most 256 kB, not PostgreSQL's 4 MB: every
 * scan of a GIN index reads its whole pending list, so after a million-deal import each of search's
 * several reads of the deals' indexes read ~450 pages of it (a rare term 26 ms in the database, 14 with
 * the lists emptied; docs/development.md, issue 33). A list of 256 kB is read in a few dozen pages and is
 * merged into the index more often, in smaller batches (`AB_WHAT=pending node apps/bench/src/write-ab.ts`).
 */
export class Migration20261204000000_gin_pending_lists extends Migration {
  override name = 'Migration20261204000000_gin_pending_lists';

  override up(): void {
    for (const index of GIN_INDEXES) this.addSql(`alter index ${index} set (gin_pending_list_limit = 256);`);
  }
}
