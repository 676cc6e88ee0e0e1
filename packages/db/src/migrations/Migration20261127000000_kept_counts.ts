import { Migration } from '@mikro-orm/migrations';

/**
 * Counts kept by the database itself, so a list's `meta.total` costs the same at ten deals and at a
 * million (docs/api/lists-and-search.md: Lists). Row triggers change them in the transaction of the rows they count,
 * whichever path wrote them (the API, an import, a migration, an operator's psql session), so they are
 * exact under concurrent writes and roll back with them.
 *
 * Deals are counted per organization, pipeline and lifecycle stage ('' for none): a list's total is the
 * sum of the few rows its filters select. Contacts per organization. Each count is split over 8 shards,
 * one per transaction (its id modulo 8), so concurrent creates in one organization seldom wait for each
 * other's commit on one hot row, while all the rows one transaction writes go to the same shard (a
 * transaction that took shard rows in random order could deadlock with another). An update that moves a
 * deal between two counts changes the two rows in key order, for the same reason.
 */
export class Migration20261127000000_kept_counts extends Migration {
  override name = 'Migration20261127000000_kept_counts';

  override up(): void {
    this.addSql(`create table deal_counts (
      org_id uuid not null,
      pipeline_id uuid not null,
      lifecycle_stage text not null,
      shard smallint not null,
      n bigint not null,
      primary key (org_id, pipeline_id, lifecycle_stage, shard));`);
    this.addSql(`create table contact_counts (
      org_id uuid not null,
      shard smallint not null,
      n bigint not null,
      primary key (org_id, shard));`);

    this.addSql(`create function crm_count_deal(org uuid, pipeline uuid, lifecycle text, delta int)
      returns void language sql as $$
      insert into deal_counts as c (org_id, pipeline_id, lifecycle_stage, shard, n)
        values (org, pipeline, coalesce(lifecycle, ''), (txid_current() % 8)::smallint, delta)
        on conflict (org_id, pipeline_id, lifecycle_stage, shard) do update set n = c.n + delta;
    $$;`);
    this.addSql(`create function crm_count_deals() returns trigger language plpgsql as $$
    begin
      if tg_op = 'INSERT' then
        perform crm_count_deal(new.org_id, new.pipeline_id, new.lifecycle_stage, 1);
      elsif tg_op = 'DELETE' then
        perform crm_count_deal(old.org_id, old.pipeline_id, old.lifecycle_stage, -1);
      elsif old.org_id <> new.org_id or old.pipeline_id <> new.pipeline_id
            or old.lifecycle_stage is distinct from new.lifecycle_stage then
        -- Both rows in key order: two moves in opposite directions then wait, never deadlock.
        if (old.org_id, old.pipeline_id, coalesce(old.lifecycle_stage, ''))
           < (new.org_id, new.pipeline_id, coalesce(new.lifecycle_stage, '')) then
          perform crm_count_deal(old.org_id, old.pipeline_id, old.lifecycle_stage, -1);
          perform crm_count_deal(new.org_id, new.pipeline_id, new.lifecycle_stage, 1);
        else
          perform crm_count_deal(new.org_id, new.pipeline_id, new.lifecycle_stage, 1);
          perform crm_count_deal(old.org_id, old.pipeline_id, old.lifecycle_stage, -1);
        end if;
      end if;
      return null;
    end
    $$;`);
    this.addSql(`create trigger deals_kept_counts after insert or delete or update of org_id, pipeline_id, lifecycle_stage
      on deals for each row execute function crm_count_deals();`);

    this.addSql(`create function crm_count_contact(org uuid, delta int) returns void language sql as $$
      insert into contact_counts as c (org_id, shard, n) values (org, (txid_current() % 8)::smallint, delta)
        on conflict (org_id, shard) do update set n = c.n + delta;
    $$;`);
    this.addSql(`create function crm_count_contacts() returns trigger language plpgsql as $$
    begin
      if tg_op = 'INSERT' then
        perform crm_count_contact(new.org_id, 1);
      elsif tg_op = 'DELETE' then
        perform crm_count_contact(old.org_id, -1);
      elsif old.org_id <> new.org_id then
        if old.org_id < new.org_id then
          perform crm_count_contact(old.org_id, -1);
          perform crm_count_contact(new.org_id, 1);
        else
          perform crm_count_contact(new.org_id, 1);
          perform crm_count_contact(old.org_id, -1);
        end if;
      end if;
      return null;
    end
    $$;`);
    this.addSql(`create trigger contacts_kept_counts after insert or delete or update of org_id
      on contacts for each row execute function crm_count_contacts();`);

    // What there is already.
    this.addSql(`insert into deal_counts (org_id, pipeline_id, lifecycle_stage, shard, n)
      select org_id, pipeline_id, coalesce(lifecycle_stage, ''), 0, count(*) from deals
      group by org_id, pipeline_id, coalesce(lifecycle_stage, '');`);
    this.addSql(`insert into contact_counts (org_id, shard, n)
      select org_id, 0, count(*) from contacts group by org_id;`);
  }
}
