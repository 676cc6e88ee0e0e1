import { Migration } from '@mikro-orm/migrations';

/**
 * Pipeline health, the briefing and coaching read the open (or recently closed) pipeline on every call;
 * at a million deals a scan of it cost seconds (docs/api/analytics.md: Analytics at scale). Two changes make them cost
 * what they return:
 *
 * - The kept deal counts (Migration20261127000000_kept_counts) are now kept per stage too, with the sum
 *   of the deals' values: the open pipeline's size and value are the sum of its open stages' rows. The
 *   table, its function and its trigger are rebuilt with the wider key; the sharding and the key-ordered
 *   moves stay as they were. Inserts (deals and contacts) are counted per statement rather than per row.
 * - Three indexes per organization and stage (last activity, expected close date, value) let each
 *   question walk one bounded range per stage: deals active in the last days, closing this week, the
 *   top of the list by value.
 */
export class Migration20261128000000_stage_totals extends Migration {
  override name = 'Migration20261128000000_stage_totals';

  override up(): void {
    this.addSql('drop trigger deals_kept_counts on deals;');
    this.addSql('drop function crm_count_deals();');
    this.addSql('drop function crm_count_deal(uuid, uuid, text, int);');
    this.addSql('drop table deal_counts;');

    this.addSql(`create table deal_counts (
      org_id uuid not null,
      pipeline_id uuid not null,
      stage_id uuid not null,
      lifecycle_stage text not null,
      shard smallint not null,
      n bigint not null,
      value_sum numeric not null,
      primary key (org_id, pipeline_id, stage_id, lifecycle_stage, shard));`);

    this.addSql(`create function crm_count_deal(org uuid, pipeline uuid, stage uuid, lifecycle text, delta int, amount numeric)
      returns void language sql as $$
      insert into deal_counts as c (org_id, pipeline_id, stage_id, lifecycle_stage, shard, n, value_sum)
        values (org, pipeline, stage, coalesce(lifecycle, ''), (txid_current() % 8)::smallint, delta, coalesce(amount, 0))
        on conflict (org_id, pipeline_id, stage_id, lifecycle_stage, shard)
        do update set n = c.n + delta, value_sum = c.value_sum + coalesce(amount, 0);
    $$;`);
    this.addSql(`create function crm_count_deals() returns trigger language plpgsql as $$
    begin
      if tg_op = 'DELETE' then
        perform crm_count_deal(old.org_id, old.pipeline_id, old.stage_id, old.lifecycle_stage, -1, -old.value);
      elsif (old.org_id, old.pipeline_id, old.stage_id, coalesce(old.lifecycle_stage, ''))
            = (new.org_id, new.pipeline_id, new.stage_id, coalesce(new.lifecycle_stage, '')) then
        -- Same count row: only the value moved (or nothing counted did).
        if old.value is distinct from new.value then
          perform crm_count_deal(new.org_id, new.pipeline_id, new.stage_id, new.lifecycle_stage, 0,
                                 coalesce(new.value, 0) - coalesce(old.value, 0));
        end if;
      -- Both rows in key order: two moves in opposite directions then wait, never deadlock.
      elsif (old.org_id, old.pipeline_id, old.stage_id, coalesce(old.lifecycle_stage, ''))
            < (new.org_id, new.pipeline_id, new.stage_id, coalesce(new.lifecycle_stage, '')) then
        perform crm_count_deal(old.org_id, old.pipeline_id, old.stage_id, old.lifecycle_stage, -1, -old.value);
        perform crm_count_deal(new.org_id, new.pipeline_id, new.stage_id, new.lifecycle_stage, 1, new.value);
      else
        perform crm_count_deal(new.org_id, new.pipeline_id, new.stage_id, new.lifecycle_stage, 1, new.value);
        perform crm_count_deal(old.org_id, old.pipeline_id, old.stage_id, old.lifecycle_stage, -1, -old.value);
      end if;
      return null;
    end
    $$;`);
    this.addSql(`create trigger deals_kept_counts
      after delete or update of org_id, pipeline_id, stage_id, lifecycle_stage, value
      on deals for each row execute function crm_count_deals();`);
    // Inserts are counted once per statement, grouped: an import's 1,000-row insert changes a few count
    // rows once each instead of 1,000 times (in key order, as above). A transaction that takes deal and
    // contact counts in the other order (a deal deleted with its contacts, beside an import chunk) can
    // still meet one on the same shard: PostgreSQL aborts one, the API answers 503, the import retries.
    this.addSql(`create function crm_count_inserted_deals() returns trigger language plpgsql as $$
    begin
      insert into deal_counts as c (org_id, pipeline_id, stage_id, lifecycle_stage, shard, n, value_sum)
        select org_id, pipeline_id, stage_id, coalesce(lifecycle_stage, ''), (txid_current() % 8)::smallint,
               count(*), coalesce(sum(value), 0)
          from inserted group by 1, 2, 3, 4 order by 1, 2, 3, 4
        on conflict (org_id, pipeline_id, stage_id, lifecycle_stage, shard)
        do update set n = c.n + excluded.n, value_sum = c.value_sum + excluded.value_sum;
      return null;
    end
    $$;`);
    this.addSql(`create trigger deals_kept_counts_insert after insert on deals
      referencing new table as inserted for each statement execute function crm_count_inserted_deals();`);
    this.addSql('drop trigger contacts_kept_counts on contacts;');
    this.addSql(`create trigger contacts_kept_counts after delete or update of org_id
      on contacts for each row execute function crm_count_contacts();`);
    this.addSql(`create function crm_count_inserted_contacts() returns trigger language plpgsql as $$
    begin
      insert into contact_counts as c (org_id, shard, n)
        select org_id, (txid_current() % 8)::smallint, count(*) from inserted group by 1 order by 1
        on conflict (org_id, shard) do update set n = c.n + excluded.n;
      return null;
    end
    $$;`);
    this.addSql(`create trigger contacts_kept_counts_insert after insert on contacts
      referencing new table as inserted for each statement execute function crm_count_inserted_contacts();`);
    this.addSql(`insert into deal_counts (org_id, pipeline_id, stage_id, lifecycle_stage, shard, n, value_sum)
      select org_id, pipeline_id, stage_id, coalesce(lifecycle_stage, ''), 0, count(*), coalesce(sum(value), 0)
        from deals group by org_id, pipeline_id, stage_id, coalesce(lifecycle_stage, '');`);

    this.addSql(
      'create index deals_org_stage_active on deals (org_id, stage_id, (coalesce(last_activity_at, created_at)), id);',
    );
    this.addSql('create index deals_org_stage_closing on deals (org_id, stage_id, expected_close_date, id);');
    this.addSql('create index deals_org_stage_value on deals (org_id, stage_id, value desc nulls last, id);');
  }
}
