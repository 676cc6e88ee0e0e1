import type { Quota } from '@crm/db';
import type { Result } from 'ioredis';
import type { Period } from './period.ts';
import type { RedisLink } from './redis-link.ts';

export type Counts = Record<Quota, number>;

/** One quota a request is charged against, with the organization's limit for it. */
export interface Charge {
  quota: Quota;
  limit: number;
  /** How many calls this charge is (a batch counts each item); 1 unless said. */
  units?: number;
}

/** The counts of the charged quotas after the charge, or as they stand when one was at its limit. */
export type ChargeResult =
  | { charged: true; used: Partial<Counts> }
  | { charged: false; blockedBy: Quota; used: Partial<Counts> };

/** Where a counter starts when this instance has none: the database's total plus what it has not flushed yet. */
export type Seeder = (orgId: string, period: Period) => Promise<Counts>;

/** The live monthly counters a request is checked and counted against. */
export interface QuotaCounters {
  /** Atomically: unless one of the quotas would go over its limit, adds each charge's units to it. */
  charge(orgId: string, period: Period, charges: readonly Charge[]): Promise<ChargeResult>;
  /** Takes back a charge whose request was rejected by its rate limit. */
  uncharge(orgId: string, period: Period, quotas: readonly Quota[]): Promise<void>;
  peek(orgId: string, period: Period): Promise<Counts>;
  /** Lifts live counters that are behind the database's totals (cluster mode, after Redis lost counts). */
  reconcile(
    totals: ReadonlyArray<{ orgId: string; period: Period; quota: Quota; used: number }>,
  ): Promise<void>;
  /** Forgets counters of periods other than this one. */
  prune(current: Period): void;
}

const entryKey = (orgId: string, period: Period) => `${orgId}|${period.key}`;

/** Counters in this process's memory: the embedded mode's, and the cluster's fallback while Redis is down. */
export class MemoryCounters implements QuotaCounters {
  private readonly entries = new Map<string, Counts>();
  private readonly loading = new Map<string, Promise<Counts>>();
  private readonly seed: Seeder;

  constructor(seed: Seeder) {
    this.seed = seed;
  }

  async charge(orgId: string, period: Period, charges: readonly Charge[]): Promise<ChargeResult> {
    const counts = this.entries.get(entryKey(orgId, period)) ?? (await this.load(orgId, period));
    // From here on nothing awaits: the check and the increment are one step for this process.
    const blocked = charges.find((c) => counts[c.quota] + (c.units ?? 1) > c.limit);
    if (blocked) return { charged: false, blockedBy: blocked.quota, used: pick(counts, charges) };
    for (const c of charges) counts[c.quota] += c.units ?? 1;
    return { charged: true, used: pick(counts, charges) };
  }

  async uncharge(orgId: string, period: Period, quotas: readonly Quota[]): Promise<void> {
    const counts = this.entries.get(entryKey(orgId, period));
    if (counts) for (const q of quotas) counts[q] = Math.max(0, counts[q] - 1);
  }

  async peek(orgId: string, period: Period): Promise<Counts> {
    const counts = this.entries.get(entryKey(orgId, period)) ?? (await this.load(orgId, period));
    return { ...counts };
  }

  async reconcile(): Promise<void> {
    // One process holds every count it made: nothing can be behind.
  }

  prune(current: Period): void {
    const suffix = `|${current.key}`;
    for (const key of this.entries.keys()) if (!key.endsWith(suffix)) this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }

  /** Concurrent first requests of an organization share one database read. */
  private load(orgId: string, period: Period): Promise<Counts> {
    const key = entryKey(orgId, period);
    let pending = this.loading.get(key);
    if (!pending) {
      pending = this.seed(orgId, period)
        .then((seeded) => {
          const existing = this.entries.get(key);
          if (existing) return existing;
          this.entries.set(key, seeded);
          return seeded;
        })
        .finally(() => this.loading.delete(key));
      this.loading.set(key, pending);
    }
    return pending;
  }
}

function pick(counts: Counts, charges: readonly Charge[]): Partial<Counts> {
  const used: Partial<Counts> = {};
  for (const c of charges) used[c.quota] = counts[c.quota];
  return used;
}

/**
 * Checks every charged counter against its limit and, only if none would go over, adds the units to them
 * all: atomic in Redis, so instances sharing it never lose or double a count.
 * KEYS: the counters; ARGV: their limits, then their units. Returns {status, count...}: status 0 charged
 * (counts after), -1 a counter is missing (seed it, then retry), i > 0 KEYS[i] would go over its limit
 * (nothing changed).
 */
const CHARGE_LUA = `
local n = #KEYS
local counts = {}
for i, key in ipairs(KEYS) do
  local value = redis.call('get', key)
  if not value then return {-1} end
  counts[i] = tonumber(value)
end
local status = 0
for i = 1, n do
  if status == 0 and counts[i] + tonumber(ARGV[n + i]) > tonumber(ARGV[i]) then status = i end
end
if status == 0 then
  for i, key in ipairs(KEYS) do counts[i] = redis.call('incrby', key, ARGV[n + i]) end
end
table.insert(counts, 1, status)
return counts
`;

const UNCHARGE_LUA = `
for _, key in ipairs(KEYS) do
  if redis.call('exists', key) == 1 then redis.call('decr', key) end
end
return 0
`;

/** Raises a counter to the database's total when it is behind; never lowers one. */
const RAISE_LUA = `
local value = redis.call('get', KEYS[1])
if value and tonumber(value) < tonumber(ARGV[1]) then redis.call('set', KEYS[1], ARGV[1], 'KEEPTTL') end
return 0
`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    crmQuotaCharge(numKeys: number, ...keysAndLimits: Array<string | number>): Result<number[], Context>;
    crmQuotaUncharge(numKeys: number, ...keys: string[]): Result<number, Context>;
    crmQuotaRaise(key: string, total: number): Result<number, Context>;
  }
}

/** Counters outlive their month by a week, then Redis drops them by itself. */
const KEEP_AFTER_PERIOD_S = 7 * 24 * 3600;

/**
 * Counters in Redis, shared by every instance (cluster mode). A missing counter (first use, or Redis lost
 * its data) is seeded from the database. While Redis does not answer, each instance counts in its own
 * memory, starting from the last count Redis gave it; what it counted reaches the database by the flush,
 * and `reconcile` lifts the Redis counter to the database's total once Redis is back.
 */
export class RedisCounters implements QuotaCounters {
  private readonly link: RedisLink;
  private readonly prefix: string;
  private readonly seed: Seeder;
  private readonly fallback: MemoryCounters;
  /** The last counts Redis answered, per organization and period: where the fallback starts. */
  private readonly lastSeen = new Map<string, Partial<Counts>>();
  private readonly now: () => number;

  constructor(link: RedisLink, prefix: string, seed: Seeder, now: () => number) {
    this.link = link;
    this.prefix = prefix;
    this.seed = seed;
    this.now = now;
    this.fallback = new MemoryCounters(async (orgId, period) => {
      const fromDb = await seed(orgId, period);
      const seen = this.lastSeen.get(entryKey(orgId, period)) ?? {};
      return {
        api_calls: Math.max(fromDb.api_calls, seen.api_calls ?? 0),
        ai_calls: Math.max(fromDb.ai_calls, seen.ai_calls ?? 0),
      };
    });
    const client = link.client;
    client.defineCommand('crmQuotaCharge', { lua: CHARGE_LUA });
    client.defineCommand('crmQuotaUncharge', { lua: UNCHARGE_LUA });
    client.defineCommand('crmQuotaRaise', { numberOfKeys: 1, lua: RAISE_LUA });
    // The next outage starts again from what Redis says then.
    link.onRecovered(() => this.fallback.clear());
  }

  private key(orgId: string, period: Period, quota: Quota): string {
    // One hash tag per organization and month keeps a request's counters in one Redis Cluster slot.
    return `${this.prefix}quota:{${orgId}:${period.key}}:${quota}`;
  }

  charge(orgId: string, period: Period, charges: readonly Charge[]): Promise<ChargeResult> {
    // While Redis is down (or hangs) a call does not wait for it: the per-instance counts serve.
    if (!this.link.available) return this.fallback.charge(orgId, period, charges);
    const keys = charges.map((c) => this.key(orgId, period, c.quota));
    const limits = [...charges.map((c) => c.limit), ...charges.map((c) => c.units ?? 1)];
    // Sent before the first await, so it travels with the rate limiter's command (one round trip).
    const first = this.link.client.crmQuotaCharge(keys.length, ...keys, ...limits);
    return this.completeCharge(first, orgId, period, charges, keys, limits);
  }

  private async completeCharge(
    first: Promise<number[]>,
    orgId: string,
    period: Period,
    charges: readonly Charge[],
    keys: string[],
    limits: number[],
  ): Promise<ChargeResult> {
    let reply: number[];
    try {
      reply = await first;
      if (reply[0] === -1) {
        await this.seedRedis(orgId, period);
        reply = await this.link.client.crmQuotaCharge(keys.length, ...keys, ...limits);
      }
    } catch (err) {
      this.link.failed(err as Error);
      return this.fallback.charge(orgId, period, charges);
    }
    this.link.succeeded();
    const [status = -1, ...counts] = reply;
    if (status === -1) throw new Error('quota counter vanished while being seeded');
    const used: Partial<Counts> = {};
    charges.forEach((c, i) => {
      used[c.quota] = counts[i] ?? 0;
    });
    this.remember(orgId, period, used);
    if (status === 0) return { charged: true, used };
    const blockedBy = charges[status - 1]?.quota ?? 'api_calls';
    return { charged: false, blockedBy, used };
  }

  async uncharge(orgId: string, period: Period, quotas: readonly Quota[]): Promise<void> {
    if (!this.link.available) return this.fallback.uncharge(orgId, period, quotas);
    const keys = quotas.map((q) => this.key(orgId, period, q));
    try {
      await this.link.client.crmQuotaUncharge(keys.length, ...keys);
    } catch (err) {
      this.link.failed(err as Error);
      await this.fallback.uncharge(orgId, period, quotas);
    }
  }

  async peek(orgId: string, period: Period): Promise<Counts> {
    if (!this.link.available) return this.fallback.peek(orgId, period);
    try {
      const [api, ai] = await this.link.client.mget(
        this.key(orgId, period, 'api_calls'),
        this.key(orgId, period, 'ai_calls'),
      );
      this.link.succeeded();
      const seeded = api == null || ai == null ? await this.seed(orgId, period) : undefined;
      return {
        api_calls: api == null ? (seeded?.api_calls ?? 0) : Number(api),
        ai_calls: ai == null ? (seeded?.ai_calls ?? 0) : Number(ai),
      };
    } catch (err) {
      this.link.failed(err as Error);
      return this.fallback.peek(orgId, period);
    }
  }

  async reconcile(
    totals: ReadonlyArray<{ orgId: string; period: Period; quota: Quota; used: number }>,
  ): Promise<void> {
    if (totals.length === 0 || !this.link.available) return;
    const pipeline = this.link.client.pipeline();
    for (const t of totals) pipeline.crmQuotaRaise(this.key(t.orgId, t.period, t.quota), t.used);
    await pipeline.exec();
  }

  prune(current: Period): void {
    this.fallback.prune(current);
    const suffix = `|${current.key}`;
    for (const key of this.lastSeen.keys()) if (!key.endsWith(suffix)) this.lastSeen.delete(key);
  }

  /** First use of an organization's month, or Redis lost it: start from the database (plus unflushed counts). */
  private async seedRedis(orgId: string, period: Period): Promise<void> {
    const counts = await this.seed(orgId, period);
    const ttl = Math.ceil((period.end.getTime() - this.now()) / 1000) + KEEP_AFTER_PERIOD_S;
    // NX: when several instances seed at once, the first one's value stands and the others count on it.
    await Promise.all(
      (['api_calls', 'ai_calls'] as const).map((quota) =>
        this.link.client.set(this.key(orgId, period, quota), counts[quota], 'EX', ttl, 'NX'),
      ),
    );
  }

  private remember(orgId: string, period: Period, used: Partial<Counts>): void {
    const key = entryKey(orgId, period);
    const seen = this.lastSeen.get(key);
    if (seen) Object.assign(seen, used);
    else this.lastSeen.set(key, { ...used });
  }
}
