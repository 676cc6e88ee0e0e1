import { Migration } from '@mikro-orm/migrations';

/**
 * Counts kept by the database itself, so a list's `meta.total` costs the same at ten deals and at a
 * million (README: Cost at scale). Row triggers change them in the transaction of the rows they count,
 * whichever path wrote them (the API, an import, a migration, an operator's psql session), so they are
 * exact under concurrent writes and roll back with them.
 *
 * Deals are counted per organization, pipeline and lifecycle stage ('' for none): a list's total is the
 * sum of the few rows its filters select. Contacts per organization. Each count is split over 8 shards
 * picked at random per write, so concurrent creates in one organization seldom wait for each other's
 * commit on one hot row.
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

    this.addSql(`create function crm_count_deals() returns trigger language plpgsql as $$
    declare
      pick smallint := floor(random() * 8)::smallint;
    begin
      if tg_op = 'UPDATE' and old.org_id = new.org_id and old.pipeline_id = new.pipeline_id
         and old.lifecycle_stage is not distinct from new.lifecycle_stage then
        return null;
      end if;
      if tg_op in ('DELETE', 'UPDATE') then
        insert into deal_counts as c (org_id, pipeline_id, lifecycle_stage, shard, n)
          values (old.org_id, old.pipeline_id, coalesce(old.lifecycle_stage, ''), pick, -1)
          on conflict (org_id, pipeline_id, lifecycle_stage, shard) do update set n = c.n - 1;
      end if;
      if tg_op in ('INSERT', 'UPDATE') then
        insert into deal_counts as c (org_id, pipeline_id, lifecycle_stage, shard, n)
          values (new.org_id, new.pipeline_id, coalesce(new.lifecycle_stage, ''), pick, 1)
          on conflict (org_id, pipeline_id, lifecycle_stage, shard) do update set n = c.n + 1;
      end if;
      return null;
    end
    $$;`);
    this.addSql(`create trigger deals_kept_counts after insert or delete or update of org_id, pipeline_id, lifecycle_stage
      on deals for each row execute function crm_count_deals();`);

    this.addSql(`create function crm_count_contacts() returns trigger language plpgsql as $$
    declare
      pick smallint := floor(random() * 8)::smallint;
    begin
      if tg_op = 'UPDATE' and old.org_id = new.org_id then
        return null;
      end if;
      if tg_op in ('DELETE', 'UPDATE') then
        insert into contact_counts as c (org_id, shard, n) values (old.org_id, pick, -1)
          on conflict (org_id, shard) do update set n = c.n - 1;
      end if;
      if tg_op in ('INSERT', 'UPDATE') then
        insert into contact_counts as c (org_id, shard, n) values (new.org_id, pick, 1)
          on conflict (org_id, shard) do update set n = c.n + 1;
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
