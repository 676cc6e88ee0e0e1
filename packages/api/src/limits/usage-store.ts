import { type Orm, type Quota, sqlOf } from '@crm/db';
import { uuidv7 } from 'uuidv7';
import type { Counts } from './quota-counters.ts';

export interface CountRow {
  orgId: string;
  period: string;
  quota: Quota;
  used: number;
}

export interface AlertRow {
  orgId: string;
  period: string;
  quota: Quota;
  thresholdPercent: number;
  used: number;
  limit: number;
}

/** An organization's own monthly quotas; null keeps the configured default. */
export interface OwnQuotas {
  api_calls: number | null;
  ai_calls: number | null;
}

/** The limits' side of the database: counted calls, organizations' own quotas, alerts. Never per request. */
export class UsageStore {
  private readonly orm: Orm;

  constructor(orm: Orm) {
    this.orm = orm;
  }

  private db() {
    return sqlOf(this.orm.em.fork());
  }

  async counts(orgId: string, period: string): Promise<Counts> {
    const rows = await this.db()
      .selectFrom('usage_counters')
      .select(['quota', 'used'])
      .where('org_id', '=', orgId)
      .where('period', '=', period)
      .execute();
    const counts: Counts = { api_calls: 0, ai_calls: 0 };
    for (const row of rows) counts[row.quota] = Number(row.used);
    return counts;
  }

  /** Adds each row's `used` to the stored count (one statement, upsert-add) and returns the new totals. */
  async add(rows: readonly CountRow[]): Promise<CountRow[]> {
    if (rows.length === 0) return [];
    const now = new Date();
    const totals = await this.db()
      .insertInto('usage_counters')
      .values(
        rows.map((r) => ({
          org_id: r.orgId,
          period: r.period,
          quota: r.quota,
          used: r.used,
          updated_at: now,
        })),
      )
      .onConflict((oc) =>
        oc.columns(['org_id', 'period', 'quota']).doUpdateSet((eb) => ({
          used: eb('usage_counters.used', '+', eb.ref('excluded.used')),
          updated_at: eb.ref('excluded.updated_at'),
        })),
      )
      .returning(['org_id', 'period', 'quota', 'used'])
      .execute();
    return totals.map((t) => ({ orgId: t.org_id, period: t.period, quota: t.quota, used: Number(t.used) }));
  }

  async ownQuotas(orgId: string): Promise<OwnQuotas> {
    const row = await this.db()
      .selectFrom('organization_quotas')
      .select(['api_calls_per_month', 'ai_calls_per_month'])
      .where('org_id', '=', orgId)
      .executeTakeFirst();
    const num = (v: unknown) => (v == null ? null : Number(v));
    return { api_calls: num(row?.api_calls_per_month), ai_calls: num(row?.ai_calls_per_month) };
  }

  /** Records alerts; one that is already there (another instance, an earlier run) stays as it was. */
  async recordAlerts(alerts: readonly AlertRow[]): Promise<void> {
    if (alerts.length === 0) return;
    const now = new Date();
    await this.db()
      .insertInto('usage_alerts')
      .values(
        alerts.map((a) => ({
          id: uuidv7(),
          org_id: a.orgId,
          period: a.period,
          quota: a.quota,
          threshold_percent: a.thresholdPercent,
          used: a.used,
          quota_limit: a.limit,
          created_at: now,
        })),
      )
      .onConflict((oc) => oc.columns(['org_id', 'period', 'quota', 'threshold_percent']).doNothing())
      .execute();
  }
}
