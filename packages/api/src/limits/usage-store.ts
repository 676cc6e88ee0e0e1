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

  /**
   * Adds each row's `used` to the stored month's count (upsert-add) and to today's (UTC) day bucket, in
   * one transaction, and returns the new monthly totals. Calls counted just before midnight and flushed
   * just after it land on the new day: a flush interval's worth at most.
   */
  async add(rows: readonly CountRow[]): Promise<CountRow[]> {
    if (rows.length === 0) return [];
    const now = new Date();
    const day = now.toISOString().slice(0, 10);
    const totals = await this.orm.em.fork().transactional(async (em) => {
      const db = sqlOf(em);
      const daily = new Map<string, { org_id: string; day: string; quota: Quota; used: number }>();
      for (const r of rows) {
        const key = `${r.orgId}/${r.quota}`;
        const bucket = daily.get(key);
        if (bucket) bucket.used += r.used;
        else daily.set(key, { org_id: r.orgId, day, quota: r.quota, used: r.used });
      }
      await db
        .insertInto('usage_daily')
        .values([...daily.values()])
        .onConflict((oc) =>
          oc
            .columns(['org_id', 'day', 'quota'])
            .doUpdateSet((eb) => ({ used: eb('usage_daily.used', '+', eb.ref('excluded.used')) })),
        )
        .execute();
      return db
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
    });
    return totals.map((t) => ({ orgId: t.org_id, period: t.period, quota: t.quota, used: Number(t.used) }));
  }

  /** Calls per UTC day over the `days` days ending today, oldest first, every day present (zeros too). */
  async daily(
    orgId: string,
    days: number,
    today = new Date(),
  ): Promise<Array<{ day: string; api_calls: number; ai_calls: number }>> {
    const end = Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate());
    const first = new Date(end - (days - 1) * 86_400_000).toISOString().slice(0, 10);
    const rows = await this.db()
      .selectFrom('usage_daily')
      .select((eb) => [eb.fn<string>('to_char', ['day', eb.val('YYYY-MM-DD')]).as('day'), 'quota', 'used'])
      .where('org_id', '=', orgId)
      .where('day', '>=', first)
      .execute();
    const series = Array.from({ length: days }, (_, i) => ({
      day: new Date(end - (days - 1 - i) * 86_400_000).toISOString().slice(0, 10),
      api_calls: 0,
      ai_calls: 0,
    }));
    const byDay = new Map(series.map((d) => [d.day, d]));
    for (const row of rows) {
      const bucket = byDay.get(row.day);
      if (bucket) bucket[row.quota] += Number(row.used);
    }
    return series;
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
