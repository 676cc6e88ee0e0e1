import { Migration } from '@mikro-orm/migrations';

/**
 * Pipelines and their stages get a write API (docs/api/pipelines.md):
 *
 * - `pipeline_stages.rotten_days`: after how many days without activity a deal in the stage counts as
 *   rotting (null: never), a setting clients read; nothing in the server acts on it yet.
 * - A stage is deleted only once no deal is in it (the deals' foreign key already refuses it otherwise);
 *   its kept counts (`deal_counts`, Migration20261128000000_stage_totals) are then all zero, and go with
 *   it, so the kept rows stay those of the stages that exist. Written by the database, as the counts are,
 *   whichever path deletes the stage (the API, a pipeline's delete cascading to its stages). An
 *   organization being deleted (`crm.deleting_org`) deletes its counts itself.
 * - A recent `stage_changed` activity is a positive or negative signal when the stage it names (by name,
 *   `changes.stage.to`) is a won or lost stage of its organization (`crm_activity_signals`,
 *   Migration20261129000000_analytics_aggregates), classified when written. A stage added, renamed,
 *   retyped or deleted changes which names those are: the recent activities naming its old or new name
 *   are classified again (their `changes` touched, which the classifying trigger and the signal sums
 *   follow), so the kept signals stay what classifying every activity of the week now gives.
 */
/** How far back activities are classified (SIGNAL_KEEP_DAYS of the analytics migration). */
const SIGNAL_KEEP_DAYS = 8;

export class Migration20261130000200_pipelines extends Migration {
  override name = 'Migration20261130000200_pipelines';

  override up(): void {
    this.addSql(
      'alter table pipeline_stages add column rotten_days integer null check (rotten_days between 1 and 3650);',
    );
    this.addSql(`create function crm_forget_stage_counts() returns trigger language plpgsql as $$
    begin
      if coalesce(current_setting('crm.deleting_org', true), '') <> '' then return null; end if;
      delete from deal_counts
       where org_id = old.org_id and pipeline_id = old.pipeline_id and stage_id = old.id;
      return null;
    end
    $$;`);
    this.addSql(`create trigger pipeline_stages_forget_counts after delete on pipeline_stages
      for each row execute function crm_forget_stage_counts();`);
    // OLD is null on an insert, NEW on a delete: \`in\` then compares with the one name there is.
    this.addSql(`create function crm_reclassify_stage_moves() returns trigger language plpgsql as $$
    begin
      if coalesce(current_setting('crm.deleting_org', true), '') <> '' then return null; end if;
      update activities a set changes = a.changes
       where a.org_id = coalesce(new.org_id, old.org_id) and a.type = 'stage_changed'
         and a.created_at > now() - interval '${SIGNAL_KEEP_DAYS} days'
         and a.changes->'stage'->>'to' in (old.name, new.name);
      return null;
    end
    $$;`);
    this.addSql(`create trigger pipeline_stages_reclassify after insert or delete or update of name, stage_type
      on pipeline_stages for each row execute function crm_reclassify_stage_moves();`);
  }
}
