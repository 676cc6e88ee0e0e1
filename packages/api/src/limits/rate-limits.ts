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

  constructor(config: LimitsConfig, redis?: RedisLink) {
    this.limits = groupLimits(config);
    const limiters = {} as Record<LimitGroup, Limiter>;
    for (const group of LIMIT_GROUPS) {
      const { limit, windowSeconds } = this.limits[group];
      const keyPrefix = `${config.redis?.keyPrefix ?? ''}rl:${group}`;
      limiters[group] = redis
        ? new RateLimiterRedis({
            storeClient: redis.client,
            keyPrefix,
            points: limit,
            duration: windowSeconds,
            rejectIfRedisNotReady: true,
            insuranceLimiter: new RateLimiterMemory({
              keyPrefix,
              points: Math.max(1, Math.ceil(limit / config.instanceCount)),
              duration: windowSeconds,
            }),
          })
        : new RateLimiterMemory({ keyPrefix, points: limit, duration: windowSeconds });
    }
    this.limiters = limiters;
  }

  /** Counts one request of the key in the group. Issues its Redis command before returning (pipelining). */
  consume(group: LimitGroup, apiKeyId: string): Promise<RateDecision> {
    const limit = this.limits[group];
    return this.limiters[group].consume(apiKeyId).then(
      (res) => ({ allowed: true, limit, remaining: res.remainingPoints, msBeforeReset: res.msBeforeNext }),
      (res: unknown) => {
        if (!(res instanceof RateLimiterRes)) throw res;
        return { allowed: false, limit, remaining: 0, msBeforeReset: res.msBeforeNext };
      },
    );
  }

  /** Gives back the request's point when it was rejected for another reason (a quota). */
  async refund(group: LimitGroup, apiKeyId: string): Promise<void> {
    await this.limiters[group].reward(apiKeyId);
  }
}
