import type { LimitsConfig } from '@crm/config';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { type GroupLimit, groupLimits, LIMIT_GROUPS, type LimitGroup } from './groups.ts';
import type { RedisLink } from './redis-link.ts';

export interface RateDecision {
  allowed: boolean;
  limit: GroupLimit;
  remaining: number;
  /** Until the key's current window ends. */
  msBeforeReset: number;
}

type Limiter = RateLimiterMemory | RateLimiterRedis;

/**
 * Per-API-key request counts per group, in fixed windows that start with the key's first request in
 * the group (rate-limiter-flexible). In memory for one instance; in Redis for a cluster, with an
 * in-memory insurance limiter holding each instance to its 1/N share while Redis is unavailable.
 */
export class RateLimits {
  readonly limits: Record<LimitGroup, GroupLimit>;
  private readonly limiters: Record<LimitGroup, Limiter>;
  /** Cluster mode: each instance's share while Redis is unavailable, and the limits it then enforces. */
  private readonly insurance: Record<LimitGroup, RateLimiterMemory> | undefined;
  private readonly shares: Record<LimitGroup, GroupLimit>;
  private readonly redis: RedisLink | undefined;

  constructor(config: LimitsConfig, redis?: RedisLink) {
    this.limits = groupLimits(config);
    this.redis = redis;
    const limiters = {} as Record<LimitGroup, Limiter>;
    const insurance = {} as Record<LimitGroup, RateLimiterMemory>;
    const shares = {} as Record<LimitGroup, GroupLimit>;
    for (const group of LIMIT_GROUPS) {
      const { limit, windowSeconds } = this.limits[group];
      const keyPrefix = `${config.redis?.keyPrefix ?? ''}rl:${group}`;
      shares[group] = { group, windowSeconds, limit: Math.max(1, Math.ceil(limit / config.instanceCount)) };
      insurance[group] = new RateLimiterMemory({
        keyPrefix,
        points: shares[group].limit,
        duration: windowSeconds,
      });
      limiters[group] = redis
        ? new RateLimiterRedis({
            storeClient: redis.client,
            keyPrefix,
            points: limit,
            duration: windowSeconds,
            rejectIfRedisNotReady: true,
            insuranceLimiter: insurance[group],
          })
        : new RateLimiterMemory({ keyPrefix, points: limit, duration: windowSeconds });
    }
    this.limiters = limiters;
    this.insurance = redis ? insurance : undefined;
    this.shares = shares;
  }

  /**
   * The limiter for this call: Redis's, or while Redis is unavailable (down, or hanging since its last
   * timeout) this instance's share in memory, without waiting for Redis; its answers then name the share.
   */
  private pick(group: LimitGroup): { limiter: Limiter; limit: GroupLimit } {
    if (this.insurance && this.redis && !this.redis.available)
      return { limiter: this.insurance[group], limit: this.shares[group] };
    return { limiter: this.limiters[group], limit: this.limits[group] };
  }

  /** Counts one request of the key in the group. Issues its Redis command before returning (pipelining). */
  consume(group: LimitGroup, apiKeyId: string): Promise<RateDecision> {
    const { limiter, limit } = this.pick(group);
    return limiter.consume(apiKeyId).then(
      (res) => ({ allowed: true, limit, remaining: res.remainingPoints, msBeforeReset: res.msBeforeNext }),
      (res: unknown) => {
        if (!(res instanceof RateLimiterRes)) throw res;
        return { allowed: false, limit, remaining: 0, msBeforeReset: res.msBeforeNext };
      },
    );
  }

  /** Gives back the request's point when it was rejected for another reason (a quota). */
  async refund(group: LimitGroup, apiKeyId: string): Promise<void> {
    await this.pick(group).limiter.reward(apiKeyId);
  }
}
