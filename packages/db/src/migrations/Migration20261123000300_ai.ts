import { Migration } from '@mikro-orm/migrations';

/**
 * Stored deal analyses (POST /deals/{id}/analyze): the result as the API answered it, plus the columns a
 * report would filter on. The newest per deal is what the deal's deal_health came from.
 */
export class Migration20261123000300_ai extends Migration {
  override name = 'Migration20261123000300_ai';

  override up(): void {
    this.addSql(`create table deal_analyses (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      deal_id uuid not null references deals (id) on delete cascade,
      total_score numeric(5, 1) null,
      score_band text null,
      deal_health text null,
      win_probability integer null check (win_probability between 0 and 100),
      narrative_source text not null check (narrative_source in ('built_in', 'language_model')),
      result jsonb not null,
      created_at timestamptz not null
    );`);
    this.addSql('create index deal_analyses_deal_recent on deal_analyses (deal_id, created_at desc);');
    this.addSql('create index deal_analyses_org_recent on deal_analyses (org_id, created_at desc);');
    // When a deal closed is its last stage move: coaching looks that up for every recently closed deal.
    this.addSql(
      "create index activities_stage_moves on activities (deal_id, created_at desc) where type = 'stage_changed';",
    );
  }
}
