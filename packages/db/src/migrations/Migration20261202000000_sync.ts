import { Migration } from '@mikro-orm/migrations';

/** The tables a sync reads (`updated_since`, docs/api/sync.md), by the name their changes are kept under. */
const SYNCED = ['deals', 'contacts', 'companies', 'engagements'] as const;

/**
 * Sync without the event feed (`updated_since`, `include_deleted`; docs/api/sync.md).
 *
 * `sync_changes` holds one row per record of a synced table: when it last changed (`changed_at`), its place
 * in the sync order (`position`, null until placed) and, once deleted, when (`deleted_at`: the tombstone).
 * Every write of a record puts its row back to unplaced, by statement triggers named `*_sync_*` (so every
 * write path is covered: single writes, batches, imports, erasure, cascades), apart from the history's or
 * the analytics' triggers. The events' sequencer places unplaced rows in the order their transactions
 * became visible (one pass at a time under its advisory lock, positions from a sequence), exactly as it
 * places events: a reader who has read up to a position never finds a change behind it. A side table, not
 * a column of the records: placing then writes these narrow rows, not the records (whose other triggers
 * and many indexes an update would wake), and a deleted record keeps its row as its tombstone.
 *
 * `sync_marks` says, per pass, the highest position placed and when the pass ended: `updated_since=T`
 * starts its walk after the last pass that ended before T (a change committed at or after T is placed by a
 * later pass), so a read of the last hour walks the last hour's changes only, however large the table.
 */
export class Migration20261202000000_sync extends Migration {
  override name = 'Migration20261202000000_sync';

  override up(): void {
    this.addSql('create sequence sync_changes_position;');
    this.addSql(`create table sync_changes (
      org_id uuid not null references organizations (id) on delete cascade,
      object text not null check (object in (${SYNCED.map((t) => `'${t}'`).join(', ')})),
      id uuid not null,
      position bigint null,
      changed_at timestamptz not null,
      deleted_at timestamptz null,
      primary key (object, id));`);
    // Each organization's walk of one object in sync order; what the sequencer has left to place; old
    // tombstones, for their purge.
    this.addSql(
      'create index sync_changes_walk on sync_changes (org_id, object, position) where position is not null;',
    );
    this.addSql('create index sync_changes_unplaced on sync_changes (changed_at) where position is null;');
    this.addSql(
      'create index sync_changes_tombstones on sync_changes (deleted_at) where deleted_at is not null;',
    );
    this.addSql('create table sync_marks (position bigint primary key, at timestamptz not null);');
    this.addSql('create index sync_marks_at on sync_marks (at);');

    // A record written: its row unplaced, changed now (or at its own updated_at/created_at when the
    // application's clock is ahead: `updated_since` then finds it by the time the record shows). Deleted:
    // a tombstone. Nothing while the whole organization is deleted (its rows go with it).
    this.addSql(`create function crm_sync_changed() returns trigger language plpgsql as $$
    begin
      if coalesce(current_setting('crm.deleting_org', true), '') <> '' then return null; end if;
      if tg_op = 'DELETE' then
        insert into sync_changes (org_id, object, id, changed_at, deleted_at)
          select o.org_id, tg_table_name, o.id, now(), now() from old_rows o
        on conflict (object, id) do update
          set position = null, changed_at = excluded.changed_at, deleted_at = excluded.deleted_at;
      else
        insert into sync_changes (org_id, object, id, changed_at)
          select n.org_id, tg_table_name, n.id, greatest(now(), coalesce(n.updated_at, n.created_at)) from new_rows n
        on conflict (object, id) do update
          set position = null, changed_at = excluded.changed_at, deleted_at = null;
      end if;
      return null;
    end
    $$;`);
    for (const table of SYNCED) {
      this.addSql(`create trigger ${table}_sync_insert after insert on ${table}
        referencing new table as new_rows for each statement execute function crm_sync_changed();`);
      this.addSql(`create trigger ${table}_sync_update after update on ${table}
        referencing new table as new_rows for each statement execute function crm_sync_changed();`);
      this.addSql(`create trigger ${table}_sync_delete after delete on ${table}
        referencing old table as old_rows for each statement execute function crm_sync_changed();`);
    }

    // What a record answers from other rows: a deal's stage_name, stage_type and pipeline_name (the stage's
    // and pipeline's), an activity's links and participants (engagement_links, which a deleted deal takes
    // with it). A change there is a change of the records that show it.
    this.addSql(`create function crm_sync_mark(p_org uuid, p_object text, p_ids uuid[]) returns void language sql as $$
      insert into sync_changes (org_id, object, id, changed_at)
        select p_org, p_object, i, now() from unnest(p_ids) i
      on conflict (object, id) do update set position = null, changed_at = excluded.changed_at
        where sync_changes.deleted_at is null;
    $$;`);
    this.addSql(`create function crm_sync_stage_renamed() returns trigger language plpgsql as $$
    begin
      perform crm_sync_mark(new.org_id, 'deals', array(
        select d.id from deals d where d.org_id = new.org_id and d.stage_id = new.id));
      return null;
    end
    $$;`);
    this.addSql(`create trigger pipeline_stages_sync_rename after update of name, stage_type on pipeline_stages
      for each row when ((old.name, old.stage_type) is distinct from (new.name, new.stage_type))
      execute function crm_sync_stage_renamed();`);
    this.addSql(`create function crm_sync_pipeline_renamed() returns trigger language plpgsql as $$
    begin
      perform crm_sync_mark(new.org_id, 'deals', array(
        select d.id from deals d where d.org_id = new.org_id and d.pipeline_id = new.id));
      return null;
    end
    $$;`);
    this.addSql(`create trigger pipelines_sync_rename after update of name on pipelines
      for each row when (old.name is distinct from new.name)
      execute function crm_sync_pipeline_renamed();`);
    // Links of an activity still there (not of one deleted with them: its tombstone stays).
    this.addSql(`create function crm_sync_links_changed() returns trigger language plpgsql as $$
    begin
      if coalesce(current_setting('crm.deleting_org', true), '') <> '' then return null; end if;
      if tg_op = 'DELETE' then
        insert into sync_changes (org_id, object, id, changed_at)
          select distinct e.org_id, 'engagements', e.id, now() from old_rows l join engagements e on e.id = l.engagement_id
        on conflict (object, id) do update set position = null, changed_at = excluded.changed_at
          where sync_changes.deleted_at is null;
      else
        insert into sync_changes (org_id, object, id, changed_at)
          select distinct e.org_id, 'engagements', e.id, now() from new_rows l join engagements e on e.id = l.engagement_id
        on conflict (object, id) do update set position = null, changed_at = excluded.changed_at
          where sync_changes.deleted_at is null;
      end if;
      return null;
    end
    $$;`);
    this.addSql(`create trigger engagement_links_sync_insert after insert on engagement_links
      referencing new table as new_rows for each statement execute function crm_sync_links_changed();`);
    this.addSql(`create trigger engagement_links_sync_delete after delete on engagement_links
      referencing old table as old_rows for each statement execute function crm_sync_links_changed();`);

    // The records there already: changed when they last were, placed by the sequencer's first passes.
    for (const table of SYNCED)
      this.addSql(`insert into sync_changes (org_id, object, id, changed_at)
        select org_id, '${table}', id, coalesce(updated_at, created_at) from ${table};`);
  }
}
