import type { Config } from '@crm/config';
import type { Orm, Quota } from '@crm/db';
import { type GroupLimit, LIMIT_GROUPS, type LimitGroup } from './groups.ts';
import type { Log } from './log.ts';
import { type Period, PeriodClock } from './period.ts';
import {
  type Charge,
  type Counts,
  MemoryCounters,
  type QuotaCounters,
  RedisCounters,
} from './quota-counters.ts';
import { type RateDecision, RateLimits } from './rate-limits.ts';
import { RedisLink } from './redis-link.ts';
import { type AlertRow, type CountRow, UsageStore } from './usage-store.ts';

/** Alerts are recorded when a quota's use reaches these percentages. */
export const ALERT_THRESHOLDS = [80, 95] as const;
/**
 * How long an organization's own quotas are trusted before being read again, by default
 * (`CRM_QUOTA_REFRESH_MS`): a change (`crm org set-quota`, another instance) applies to every call that
 * starts this long after it.
 */
export const OWN_QUOTAS_REFRESH_MS = 5_000;

export interface QuotaStatus {
  quota: Quota;
  limit: number;
  used: number;
}

/** Who is being counted: the organization for quotas, the API key for rate limits. */
export interface Caller {
  orgId: string;
  apiKeyId: string;
}

export interface Admission {
  /** What turned the request away, if anything: a quota takes precedence over the rate limit. */
  rejectedBy?: 'rate_limit' | Quota;
  rate: RateDecision;
  period: Period;
  /** The API quota, and the AI quota for the AI group: counts after this request (or as they stand if rejected). */
  quotas: QuotaStatus[];
  nowMs: number;
}

export interface UsageSnapshot {
  period: Period;
  quotas: Record<Quota, QuotaStatus>;
  rateLimits: GroupLimit[];
}

type PendingEntry = { orgId: string; period: Period; counts: Counts; highest: Counts };
type QuotaLimits = { api_calls: number; ai_calls: number; loadedAt: number };

/**
 * Rate limits per API key and monthly quotas per organization, checked and counted on every
 * authenticated call. Live counts are in memory (embedded mode) or Redis (cluster mode); what each
 * instance counted is added to the database every flush interval and at shutdown, so counts survive
 * restarts without a database write per request.
 */
export class Limits {
  readonly rate: RateLimits;
  private readonly config: Config['limits'];
  private readonly store: UsageStore;
  private readonly counters: QuotaCounters;
  private readonly link: RedisLink | undefined;
  private readonly log: Log;
  private readonly now: () => number;
  private readonly clock: PeriodClock;
  private readonly pending = new Map<string, PendingEntry>();
  private readonly ownQuotas = new Map<string, QuotaLimits>();
  private readonly loadingQuotas = new Map<string, Promise<QuotaLimits>>();
  private readonly recordedAlerts = new Set<string>();
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> | undefined;
  private flushFailing = false;
  private closed = false;

  private constructor(config: Config['limits'], orm: Orm, log: Log, now: () => number, link?: RedisLink) {
    this.config = config;
    this.log = log;
    this.now = now;
    this.link = link;
    this.clock = new PeriodClock(now);
    this.store = new UsageStore(orm);
    this.rate = new RateLimits(config, link);
    const seed = (orgId: string, period: Period) => this.seed(orgId, period);
    this.counters =
      link && config.redis
        ? new RedisCounters(link, config.redis.keyPrefix, seed, now)
        : new MemoryCounters(seed);
    this.timer = setInterval(() => void this.flush(), config.flushIntervalMs);
    this.timer.unref();
  }

  static async create(
    config: Config['limits'],
    orm: Orm,
    log: Log,
    options: { now?: () => number } = {},
  ): Promise<Limits> {
    let link: RedisLink | undefined;
    if (config.redis) {
      link = new RedisLink(config.redis.url, log);
      await link.connect();
    }
    return new Limits(config, orm, log, options.now ?? Date.now, link);
  }

  /**
   * Checks the caller against its group's rate limit and its organization's quotas, and counts the call
   * when both allow it. A rejected call is counted nowhere. In cluster mode the rate limiter's and the
   * quota's Redis commands go out together: one round trip.
   */
  async admit(caller: Caller, group: LimitGroup): Promise<Admission> {
    const nowMs = this.now();
    const period = this.clock.at(nowMs);
    // The fresh copy without a promise: this runs on every call.
    const limits = this.freshQuotas(caller.orgId, nowMs) ?? (await this.quotaLimits(caller.orgId));
    const charges: Charge[] = [{ quota: 'api_calls', limit: limits.api_calls }];
    if (group === 'ai') charges.push({ quota: 'ai_calls', limit: limits.ai_calls });

    const [rate, charge] = await Promise.all([
      this.rate.consume(group, caller.apiKeyId),
      this.counters.charge(caller.orgId, period, charges),
    ]);
    const quotas = charges.map((c) => ({ quota: c.quota, limit: c.limit, used: charge.used[c.quota] ?? 0 }));
    if (!charge.charged) {
      if (!rate.allowed) return { rejectedBy: charge.blockedBy, rate, period, quotas, nowMs };
      await this.rate.refund(group, caller.apiKeyId);
      const refunded = { ...rate, remaining: Math.min(rate.limit.limit, rate.remaining + 1) };
      return { rejectedBy: charge.blockedBy, rate: refunded, period, quotas, nowMs };
    }
    if (!rate.allowed) {
      await this.counters.uncharge(
        caller.orgId,
        period,
        charges.map((c) => c.quota),
      );
      for (const q of quotas) q.used -= 1;
      return { rejectedBy: 'rate_limit', rate, period, quotas, nowMs };
    }
    this.count(caller.orgId, period, quotas);
    return { rate, period, quotas, nowMs };
  }

  /**
   * Counts `units` more API calls against the organization's monthly quota for an admitted call that does
   * the work of several (a batch: one call per item), all or none: when they would go over the quota
   * nothing is counted and the answer says how the quota stands.
   */
  async chargeMore(
    caller: Caller,
    units: number,
  ): Promise<{ charged: boolean; quota: QuotaStatus; period: Period; nowMs: number }> {
    const nowMs = this.now();
    const period = this.clock.at(nowMs);
    const limits = await this.quotaLimits(caller.orgId);
    const result = await this.counters.charge(caller.orgId, period, [
      { quota: 'api_calls', limit: limits.api_calls, units },
    ]);
    const quota: QuotaStatus = {
      quota: 'api_calls',
      limit: limits.api_calls,
      used: result.used.api_calls ?? 0,
    };
    if (result.charged) this.count(caller.orgId, period, [quota], units);
    return { charged: result.charged, quota, period, nowMs };
  }

  /** The organization's quotas as they stand, with any alert they call for recorded first. */
  async usage(orgId: string): Promise<UsageSnapshot> {
    const period = this.clock.at();
    const [limits, counts] = await Promise.all([this.quotaLimits(orgId), this.counters.peek(orgId, period)]);
    const quotas: Record<Quota, QuotaStatus> = {
      api_calls: { quota: 'api_calls', limit: limits.api_calls, used: counts.api_calls },
      ai_calls: { quota: 'ai_calls', limit: limits.ai_calls, used: counts.ai_calls },
    };
    await this.recordAlerts(orgId, period, Object.values(quotas));
    return { period, quotas, rateLimits: LIMIT_GROUPS.map((g) => this.rate.limits[g]) };
  }

  /** Calls per UTC day as stored (each flush adds to today's), the last `days` days, oldest first. */
  dailyUsage(orgId: string, days: number) {
    return this.store.daily(orgId, days, new Date(this.now()));
  }

  /** Adds what this instance counted to the database; runs every flush interval and at shutdown. */
  flush(): Promise<void> {
    this.flushing ??= this.flushOnce().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    await this.flushing;
    await this.flush();
    // A stop is clean only if the counts reached the database; say so when they did not.
    if (this.pending.size > 0)
      this.log.error(
        { organizations: [...this.pending.values()].map((e) => e.orgId) },
        'usage counts could not be stored at shutdown and are lost',
      );
    await this.link?.close();
  }

  private count(orgId: string, period: Period, quotas: readonly QuotaStatus[], units = 1): void {
    const key = `${orgId}|${period.key}`;
    let entry = this.pending.get(key);
    if (!entry) {
      entry = {
        orgId,
        period,
        counts: { api_calls: 0, ai_calls: 0 },
        highest: { api_calls: 0, ai_calls: 0 },
      };
      this.pending.set(key, entry);
    }
    for (const q of quotas) {
      entry.counts[q.quota] += units;
      if (q.used > entry.highest[q.quota]) entry.highest[q.quota] = q.used;
    }
  }

  /** A counter's starting point when this instance has none: the database's total and its own unflushed counts. */
  private async seed(orgId: string, period: Period): Promise<Counts> {
    const stored = await this.store.counts(orgId, period.key);
    const unflushed = this.pending.get(`${orgId}|${period.key}`)?.counts;
    return {
      api_calls: stored.api_calls + (unflushed?.api_calls ?? 0),
      ai_calls: stored.ai_calls + (unflushed?.ai_calls ?? 0),
    };
  }

  /** The organization's quotas as this process read them, if that was less than CRM_QUOTA_REFRESH_MS ago. */
  private freshQuotas(orgId: string, nowMs: number): QuotaLimits | undefined {
    const own = this.ownQuotas.get(orgId);
    return own && nowMs - own.loadedAt < this.config.quotaRefreshMs ? own : undefined;
  }

  /**
   * The organization's quotas, read again once its copy is CRM_QUOTA_REFRESH_MS old: the calls that come
   * meanwhile wait for that one read (about a millisecond, once per organization every few seconds). An
   * old copy used to answer at once while the read ran, so an organization idle since a change had its
   * first call judged by the old quota however long ago the change was. A failed read falls back to the
   * old copy; the call's own queries meet the database's trouble, if any, themselves.
   */
  private quotaLimits(orgId: string): Promise<QuotaLimits> {
    const fresh = this.freshQuotas(orgId, this.now());
    if (fresh) return Promise.resolve(fresh);
    const cached = this.ownQuotas.get(orgId);
    let loading = this.loadingQuotas.get(orgId);
    if (!loading) {
      loading = this.store
        .ownQuotas(orgId)
        .then((own) => {
          const limits = {
            api_calls: own.api_calls ?? this.config.monthlyQuota.api,
            ai_calls: own.ai_calls ?? this.config.monthlyQuota.ai,
            loadedAt: this.now(),
          };
          this.ownQuotas.set(orgId, limits);
          return limits;
        })
        .finally(() => this.loadingQuotas.delete(orgId));
      this.loadingQuotas.set(orgId, loading);
    }
    return cached ? loading.catch(() => cached) : loading;
  }

  private async flushOnce(): Promise<void> {
    const entries = [...this.pending.values()];
    this.pending.clear();
    const rows: CountRow[] = entries.flatMap((e) =>
      (['api_calls', 'ai_calls'] as const)
        .filter((quota) => e.counts[quota] > 0)
        .map((quota) => ({ orgId: e.orgId, period: e.period.key, quota, used: e.counts[quota] })),
    );
    let totals: CountRow[];
    try {
      totals = await this.store.add(rows);
    } catch (err) {
      // Nothing is lost: the counts wait for the next flush.
      for (const e of entries) this.merge(e);
      if (!this.flushFailing) this.log.warn({ err }, 'could not store usage counts; retrying every flush');
      this.flushFailing = true;
      return;
    }
    if (this.flushFailing) this.log.info({}, 'usage counts are stored again');
    this.flushFailing = false;

    const periods = new Map(entries.map((e) => [e.period.key, e.period]));
    try {
      await this.counters.reconcile(
        totals.flatMap((t) => {
          const period = periods.get(t.period);
          return period ? [{ orgId: t.orgId, period, quota: t.quota, used: t.used }] : [];
        }),
      );
    } catch (err) {
      this.link?.failed(err as Error);
    }

    const stored = new Map(totals.map((t) => [`${t.orgId}|${t.period}|${t.quota}`, t.used]));
    for (const e of entries) {
      const limits = this.ownQuotas.get(e.orgId);
      if (!limits) continue;
      const status = (quota: Quota): QuotaStatus => ({
        quota,
        limit: limits[quota],
        used: Math.max(e.highest[quota], stored.get(`${e.orgId}|${e.period.key}|${quota}`) ?? 0),
      });
      await this.recordAlerts(e.orgId, e.period, [status('api_calls'), status('ai_calls')]).catch(
        (err: unknown) => this.log.warn({ err }, 'could not record a usage alert; retrying'),
      );
    }
    this.prune();
  }

  /** Puts counts that could not be stored back, beside any counted since. */
  private merge(entry: PendingEntry): void {
    const key = `${entry.orgId}|${entry.period.key}`;
    const current = this.pending.get(key);
    if (!current) {
      this.pending.set(key, entry);
      return;
    }
    for (const quota of ['api_calls', 'ai_calls'] as const) {
      current.counts[quota] += entry.counts[quota];
      current.highest[quota] = Math.max(current.highest[quota], entry.highest[quota]);
    }
  }

  /** Records the 80 % and 95 % alerts a quota's use has reached, once per organization, period and quota. */
  private async recordAlerts(orgId: string, period: Period, statuses: readonly QuotaStatus[]): Promise<void> {
    const due: AlertRow[] = [];
    for (const s of statuses) {
      for (const threshold of ALERT_THRESHOLDS) {
        // A quota of 0 switches the feature off; it is not a reason to alert.
        if (s.limit === 0 || s.used * 100 < s.limit * threshold) continue;
        const key = `${orgId}|${period.key}|${s.quota}|${threshold}`;
        if (this.recordedAlerts.has(key)) continue;
        due.push({
          orgId,
          period: period.key,
          quota: s.quota,
          thresholdPercent: threshold,
          used: s.used,
          limit: s.limit,
        });
      }
    }
    if (due.length === 0) return;
    await this.store.recordAlerts(due);
    for (const a of due) this.recordedAlerts.add(`${orgId}|${a.period}|${a.quota}|${a.thresholdPercent}`);
  }

  private prune(): void {
    const current = this.clock.at();
    this.counters.prune(current);
    const marker = `|${current.key}|`;
    for (const key of this.recordedAlerts) if (!key.includes(marker)) this.recordedAlerts.delete(key);
  }
}
