import { Migration } from '@mikro-orm/migrations';

/**
 * Monthly quotas: an organization's own limits, the calls counted per UTC month (added to by each
 * instance's periodic flush, never written per request), and the 80 % / 95 % alerts, once each.
 */
export class Migration20261123000100_limits extends Migration {
  override name = 'Migration20261123000100_limits';

  override up(): void {
    this.addSql(`create table organization_quotas (
      org_id uuid primary key references organizations (id) on delete cascade,
      api_calls_per_month bigint null check (api_calls_per_month >= 0),
      ai_calls_per_month bigint null check (ai_calls_per_month >= 0),
      updated_at timestamptz not null
    );`);

    this.addSql(`create table usage_counters (
      org_id uuid not null references organizations (id) on delete cascade,
      period text not null check (period ~ '^[0-9]{4}-[0-9]{2}$'),
      quota text not null check (quota in ('api_calls', 'ai_calls')),
      used bigint not null check (used >= 0),
      updated_at timestamptz not null,
      primary key (org_id, period, quota)
    );`);

    this.addSql(`create table usage_alerts (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      period text not null check (period ~ '^[0-9]{4}-[0-9]{2}$'),
      quota text not null check (quota in ('api_calls', 'ai_calls')),
      threshold_percent integer not null check (threshold_percent in (80, 95)),
      used bigint not null,
      quota_limit bigint not null,
      created_at timestamptz not null,
      constraint usage_alerts_once unique (org_id, period, quota, threshold_percent)
    );`);
  }
}
