import { Migration } from '@mikro-orm/migrations';

/**
 * The whole first schema in plain PostgreSQL, so PGlite and PostgreSQL run the same statements.
 * Tenant tables lead their indexes with org_id: every query filters on it, and it is the shard key
 * should the data ever move to a distributed PostgreSQL.
 */
export class Migration20261122000000_initial extends Migration {
  override name = 'Migration20261122000000_initial';

  override up(): void {
    this.addSql('create extension if not exists pg_trgm;');
    this.addSql('create extension if not exists btree_gin;');

    this.addSql(`create table organizations (
      id uuid primary key,
      name text not null,
      created_at timestamptz not null
    );`);

    this.addSql(`create table api_keys (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      name text null,
      prefix text not null,
      key_hash text not null,
      created_at timestamptz not null,
      last_used_at timestamptz null,
      revoked_at timestamptz null,
      constraint api_keys_key_hash_unique unique (key_hash)
    );`);
    this.addSql('create index api_keys_org_id_index on api_keys (org_id);');

    this.addSql(`create table pipelines (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      name text not null,
      is_default boolean not null default false,
      created_at timestamptz not null
    );`);
    this.addSql('create unique index pipelines_one_default on pipelines (org_id) where is_default;');

    this.addSql(`create table pipeline_stages (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      pipeline_id uuid not null references pipelines (id) on delete cascade,
      name text not null,
      stage_type text not null check (stage_type in ('open', 'won', 'lost')),
      position integer not null,
      color text not null,
      probability integer null check (probability between 0 and 100),
      created_at timestamptz not null,
      constraint pipeline_stages_position_unique unique (pipeline_id, position)
    );`);
    this.addSql('create index pipeline_stages_org_id_index on pipeline_stages (org_id);');

    this.addSql(`create table deals (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      title text not null,
      company_name text null,
      value numeric(18, 2) null,
      currency text null,
      win_probability integer null check (win_probability between 0 and 100),
      deal_health text null,
      lifecycle_stage text null,
      lifecycle_stage_manual boolean not null default false,
      pipeline_id uuid not null references pipelines (id),
      stage_id uuid not null references pipeline_stages (id),
      owner_name text null,
      contact_name text null,
      contact_email text null,
      contact_phone text null,
      notes text null,
      description text null,
      lead_source text null,
      expected_close_date timestamptz null,
      last_activity_at timestamptz null,
      created_at timestamptz not null,
      updated_at timestamptz null
    );`);
    this.addSql('create index deals_org_recent on deals (org_id, created_at desc, id desc);');
    this.addSql('create index deals_org_lifecycle on deals (org_id, lifecycle_stage, created_at desc);');
    this.addSql('create index deals_org_pipeline on deals (org_id, pipeline_id, created_at desc);');
    this.addSql('create index deals_stage_id_index on deals (stage_id);');
    this.addSql('create index deals_title_trgm on deals using gin (org_id, title gin_trgm_ops);');
    this.addSql('create index deals_company_trgm on deals using gin (org_id, company_name gin_trgm_ops);');

    this.addSql(`create table contacts (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      deal_id uuid not null references deals (id) on delete cascade,
      name text not null,
      email text null,
      title text null,
      phone text null,
      role_type text not null default 'unknown',
      department text null,
      influence_level text null,
      engagement_level text null,
      sentiment text null,
      linkedin_url text null,
      notes text null,
      created_at timestamptz not null,
      updated_at timestamptz null
    );`);
    this.addSql('create index contacts_org_recent on contacts (org_id, created_at desc, id desc);');
    this.addSql('create index contacts_deal_id_index on contacts (deal_id);');
    this.addSql('create index contacts_name_trgm on contacts using gin (org_id, name gin_trgm_ops);');
    this.addSql('create index contacts_email_trgm on contacts using gin (org_id, email gin_trgm_ops);');
    this.addSql('create index contacts_title_trgm on contacts using gin (org_id, title gin_trgm_ops);');

    this.addSql(`create table activities (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      deal_id uuid not null references deals (id) on delete cascade,
      contact_id uuid null,
      type text not null,
      description text null,
      changes jsonb null,
      created_at timestamptz not null
    );`);
    this.addSql('create index activities_deal_recent on activities (deal_id, created_at desc);');
    this.addSql('create index activities_org_recent on activities (org_id, created_at desc);');

    this.addSql(`create table idempotency_keys (
      id uuid primary key,
      api_key_id uuid not null references api_keys (id) on delete cascade,
      key text not null,
      operation text not null,
      request_hash text not null,
      response_status integer null,
      response_body jsonb null,
      created_at timestamptz not null,
      constraint idempotency_keys_unique unique (api_key_id, key)
    );`);
    this.addSql('create index idempotency_keys_created_at on idempotency_keys (created_at);');
  }
}
