import { type Orm, type Quota, sqlOf, uuidv7 } from '@crm/db';
import { sql } from 'kysely';
import { orgDb, orgFork, unscopedDb } from '../org-scope.ts';
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

  /** The builder scoped to one organization: each read below is of the organization it is asked about. */
  private scoped(orgId: string) {
    return orgDb(orgFork(this.orm.em, orgId));
  }

  async counts(orgId: string, period: string): Promise<Counts> {
    const rows = await this.scoped(orgId)
      .selectFrom('usage_counters')
      .select(['quota', 'used'])
      .where('period', '=', period)
      .execute();
    const counts: Counts = { api_calls: 0, ai_calls: 0 };
    for (const row of rows) counts[row.quota] = Number(row.used);
    return counts;
  }

  /**
   * Adds each row's `used` to the stored month's count (upsert-add) and to today's (UTC) day bucket, in
   * one transaction, and returns the new monthly totals. Calls counted just before midnight and flushed
   * just after it land on the new day: a flush interval's worth at most. Rows of an organization that no
   * longer exists are dropped in the statement itself, so a deleted organization never blocks the others.
   */
  async add(rows: readonly CountRow[]): Promise<CountRow[]> {
    if (rows.length === 0) return [];
    const now = new Date();
    const day = now.toISOString().slice(0, 10);
    const daily = new Map<string, { orgId: string; quota: Quota; used: number }>();
    for (const r of rows) {
      const key = `${r.orgId}/${r.quota}`;
      const bucket = daily.get(key);
      if (bucket) bucket.used += r.used;
      else daily.set(key, { orgId: r.orgId, quota: r.quota, used: r.used });
    }
    const totals = await this.orm.em.fork().transactional(async (em) => {
      const db = unscopedDb(
        em,
        'the usage flush adds up every organization’s counted calls in one statement',
      );
      const dayValues = sql.join(
        [...daily.values()].map((d) => sql`(${d.orgId}::uuid, ${d.quota}, ${d.used}::bigint)`),
      );
      await sql`insert into usage_daily (org_id, day, quota, used)
        select v.org_id, ${day}::date, v.quota, v.used from (values ${dayValues}) as v (org_id, quota, used)
         where exists (select 1 from organizations o where o.id = v.org_id)
        on conflict (org_id, day, quota) do update set used = usage_daily.used + excluded.used`.execute(db);
      const monthValues = sql.join(
        rows.map((r) => sql`(${r.orgId}::uuid, ${r.period}, ${r.quota}, ${r.used}::bigint)`),
      );
      const result = await sql<{ org_id: string; period: string; quota: Quota; used: string | number }>`
        insert into usage_counters (org_id, period, quota, used, updated_at)
        select v.org_id, v.period, v.quota, v.used, ${now}::timestamptz
          from (values ${monthValues}) as v (org_id, period, quota, used)
         where exists (select 1 from organizations o where o.id = v.org_id)
        on conflict (org_id, period, quota) do update
          set used = usage_counters.used + excluded.used, updated_at = excluded.updated_at
        returning org_id, period, quota, used`.execute(db);
      return result.rows;
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
    const rows = await this.scoped(orgId)
      .selectFrom('usage_daily')
      .select((eb) => [eb.fn<string>('to_char', ['day', eb.val('YYYY-MM-DD')]).as('day'), 'quota', 'used'])
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
    const row = await this.scoped(orgId)
      .selectFrom('organization_quotas')
      .select(['api_calls_per_month', 'ai_calls_per_month'])
      .executeTakeFirst();
    const num = (v: unknown) => (v == null ? null : Number(v));
    return { api_calls: num(row?.api_calls_per_month), ai_calls: num(row?.ai_calls_per_month) };
  }

  /** Records alerts; one that is already there (another instance, an earlier run) stays as it was. */
  async recordAlerts(alerts: readonly AlertRow[]): Promise<void> {
    if (alerts.length === 0) return;
    const now = new Date();
    await sqlOf(this.orm.em.fork())
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
