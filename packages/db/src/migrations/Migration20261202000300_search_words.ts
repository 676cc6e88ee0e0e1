import { Migration } from '@mikro-orm/migrations';

/**
 * Search by words (issue 33; docs/api/lists-and-search.md: Search).
 *
 * One GIN index per searched table of its searched values' words (`to_tsvector('simple', …)`: split by
 * PostgreSQL's parser, lower-cased, no stemming), beside the organization's id. A term whose every word
 * begins a word of a row matches it (`hooli renew` finds "Renewal for Hooli Systems"): the index reads
 * those rows as whole-word posting lists (`hooli:* & renew:*`), where the trigram indexes read every row
 * holding the term's trigrams and recheck it (62 ms at a million deals for "Hooli renewal", common apart,
 * never one phrase). The expressions here and in search.service.ts (`WORD_DOCS`) are one text: the planner
 * uses an index only for the expression it was built on.
 */
export class Migration20261202000300_search_words extends Migration {
  override name = 'Migration20261202000300_search_words';

  override up(): void {
    this.addSql(
      `create index deals_search_words on deals using gin (org_id, to_tsvector('simple', coalesce(title, '') || ' ' || coalesce(company_name, '')));`,
    );
    this.addSql(
      `create index contacts_search_words on contacts using gin (org_id, to_tsvector('simple', name || ' ' || coalesce(email, '') || ' ' || coalesce(title, '')));`,
    );
    this.addSql(
      `create index companies_search_words on companies using gin (org_id, to_tsvector('simple', name || ' ' || coalesce(domain, '')));`,
    );
    this.addSql('analyze deals, contacts, companies;');
  }
}
