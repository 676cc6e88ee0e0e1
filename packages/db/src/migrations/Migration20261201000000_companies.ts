import { Migration } from '@mikro-orm/migrations';

/**
 * Companies (docs/api/companies.md): a table of their own, linked from deals and contacts by `company_id`
 * (set to null when the company is deleted: the deal keeps its `company_name`).
 *
 * - `domain` is unique per organization (stored normalized by the API: lower case, no scheme, `www.`).
 * - `deals.company_name_follows`: the deal's `company_name` is its company's name, copied when it was
 *   linked without a name of its own, and renamed with the company (the API does both); a client's own
 *   `company_name` clears it. So every read of a deal (lists, detail, search, events) reads one column, as
 *   before, with no join.
 * - The companies' count is kept as the contacts' is (Migration20261127000000_kept_counts): 8 shards per
 *   organization, changed by a row trigger in the writer's transaction.
 * - Custom fields on companies: their unique values are claimed by the same trigger as the deals' and the
 *   contacts' (Migration20261130000000_custom_fields).
 */
export class Migration20261201000000_companies extends Migration {
  override name = 'Migration20261201000000_companies';

  override up(): void {
    this.addSql(`create table companies (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      name text not null,
      domain text null,
      industry text null,
      size text null,
      website text null,
      custom jsonb not null default '{}',
      created_at timestamptz not null,
      updated_at timestamptz null);`);
    this.addSql(
      'create unique index companies_domain on companies (org_id, domain) where domain is not null;',
    );
    this.addSql('create index companies_org_created on companies (org_id, created_at desc, id desc);');
    this.addSql('create index companies_name_trgm on companies using gin (org_id, name gin_trgm_ops);');
    this.addSql('create index companies_domain_trgm on companies using gin (org_id, domain gin_trgm_ops);');
    this.addSql(
      `create index companies_name_prefix on companies (org_id, (lower(name) collate "C"), created_at desc, id desc);`,
    );

    this.addSql(
      'alter table deals add column company_id uuid null references companies (id) on delete set null;',
    );
    this.addSql('alter table deals add column company_name_follows boolean not null default false;');
    this.addSql(
      'create index deals_company on deals (org_id, company_id, created_at desc) where company_id is not null;',
    );
    this.addSql(
      'alter table contacts add column company_id uuid null references companies (id) on delete set null;',
    );
    this.addSql(
      'create index contacts_company on contacts (org_id, company_id, created_at desc) where company_id is not null;',
    );

    this.addSql(`create table company_counts (
      org_id uuid not null,
      shard smallint not null,
      n bigint not null,
      primary key (org_id, shard));`);
    this.addSql(`create function crm_count_companies() returns trigger language plpgsql as $$
    begin
      insert into company_counts as c (org_id, shard, n)
        values (coalesce(new.org_id, old.org_id), (txid_current() % 8)::smallint,
                case when tg_op = 'INSERT' then 1 else -1 end)
        on conflict (org_id, shard) do update set n = c.n + excluded.n;
      return null;
    end
    $$;`);
    this.addSql(`create trigger companies_kept_counts after insert or delete on companies
      for each row execute function crm_count_companies();`);

    this.addSql(`create trigger companies_custom_unique_insert after insert on companies
      for each row when (new.custom <> '{}') execute function crm_claim_custom_unique('companies');`);
    this.addSql(`create trigger companies_custom_unique_update after update of custom on companies
      for each row when (old.custom is distinct from new.custom)
      execute function crm_claim_custom_unique('companies');`);
    this.addSql(`create trigger companies_custom_unique_delete after delete on companies
      for each row when (old.custom <> '{}') execute function crm_claim_custom_unique('companies');`);
  }
}
