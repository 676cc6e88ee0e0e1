import type { AuthedContext } from '../context.ts';
import { ApiError, type ErrorCode } from '../errors.ts';
import type { LimitGroup } from './groups.ts';
import type { Admission } from './limits.ts';
import type { Period } from './period.ts';

const QUOTA_HEADER_PREFIX = { api_calls: 'X-API-Quota', ai_calls: 'X-AI-Quota' } as const;
const QUOTA_HEADER_FIELDS = ['Limit', 'Used', 'Remaining', 'Reset'] as const;

/** Every header a call's limits put on its answer (for CORS to expose them to browser apps). */
export const LIMIT_HEADER_NAMES: readonly string[] = [
  'RateLimit',
  'RateLimit-Policy',
  'Retry-After',
  ...Object.values(QUOTA_HEADER_PREFIX).flatMap((prefix) => QUOTA_HEADER_FIELDS.map((f) => `${prefix}-${f}`)),
];

/**
 * What a client is told of a quota, wherever it is told: the quota headers, a 429's body, MCP's `_meta`
 * and GET /usage.
 */
export function quotaFigures(quota: { limit: number; used: number }, period: Pick<Period, 'resetAt'>) {
  return {
    limit: quota.limit,
    used: quota.used,
    remaining: Math.max(0, quota.limit - quota.used),
    reset_at: period.resetAt,
  };
}

/** What a client is told of its rate-limit window (MCP's `_meta`; the RateLimit headers say the same). */
export function rateFigures(rate: Admission['rate']) {
  return {
    group: rate.limit.group,
    limit: rate.limit.limit,
    remaining: rate.remaining,
    reset_seconds: secondsUntil(rate.msBeforeReset),
  };
}

/**
 * The rate-limit headers of the IETF httpapi draft (draft-10 form), e.g.
 * `RateLimit-Policy: "crud";q=200;w=60` and `RateLimit: "crud";r=57;t=13`, and the quota headers.
 */
export function limitHeaders(admission: Admission): Record<string, string> {
  const { group, limit, windowSeconds } = admission.rate.limit;
  const headers: Record<string, string> = {
    'RateLimit-Policy': `"${group}";q=${limit};w=${windowSeconds}`,
    RateLimit: `"${group}";r=${admission.rate.remaining};t=${secondsUntil(admission.rate.msBeforeReset)}`,
  };
  for (const q of admission.quotas) {
    const prefix = QUOTA_HEADER_PREFIX[q.quota];
    const figures = quotaFigures(q, admission.period);
    headers[`${prefix}-Limit`] = String(figures.limit);
    headers[`${prefix}-Used`] = String(figures.used);
    headers[`${prefix}-Remaining`] = String(figures.remaining);
    headers[`${prefix}-Reset`] = figures.reset_at;
  }
  return headers;
}

const secondsUntil = (ms: number) => Math.max(0, Math.ceil(ms / 1000));

/**
 * A 429 for a monthly quota, with the contract's fields: when to retry, and the quota's figures as they
 * stand.
 */
export function quotaExceeded(
  code: Extract<ErrorCode, 'api_quota_exceeded' | 'ai_quota_exceeded'>,
  message: string,
  quota: { limit: number; used: number } | undefined,
  period: Period,
  nowMs: number,
): ApiError {
  const retryAfter = secondsUntil(period.end.getTime() - nowMs);
  const figures = quotaFigures(quota ?? { limit: 0, used: 0 }, period);
  // The contract's `limit` is at least 1; a quota of 0 (feature switched off) leaves it out.
  const { limit, ...rest } = figures;
  return new ApiError(code, message, {
    extra: { retry_after_seconds: retryAfter, ...(limit >= 1 ? { limit } : {}), ...rest },
    headers: { 'Retry-After': String(retryAfter) },
  });
}

function rejection(admission: Admission): ApiError {
  const { rejectedBy, rate, period, nowMs } = admission;
  if (rejectedBy === 'rate_limit') {
    const { group, limit, windowSeconds } = rate.limit;
    const retryAfter = secondsUntil(rate.msBeforeReset);
    return new ApiError(
      'rate_limited',
      `Rate limit exceeded: ${limit} requests per ${windowSeconds} s per API key in the ${group} group; retry in ${retryAfter} s`,
      {
        extra: {
          retry_after_seconds: retryAfter,
          limit,
          used: limit,
          remaining: 0,
          reset_at: new Date(nowMs + rate.msBeforeReset).toISOString(),
        },
        headers: { 'Retry-After': String(retryAfter) },
      },
    );
  }
  const quota = admission.quotas.find((q) => q.quota === rejectedBy) ?? admission.quotas[0];
  const what = rejectedBy === 'ai_calls' ? 'AI call' : 'API call';
  return quotaExceeded(
    rejectedBy === 'ai_calls' ? 'ai_quota_exceeded' : 'api_quota_exceeded',
    `Monthly ${what} quota exhausted: ${quota?.used} of ${quota?.limit} used in ${period.key} (UTC); it resets at ${period.resetAt}`,
    quota,
    period,
    nowMs,
  );
}

/**
 * The limit check of every authenticated call, REST and tRPC alike, right after authentication:
 * puts the rate-limit and quota headers on the response (errors included) and throws the 429 when the
 * call is over a limit. A rejected call is counted nowhere.
 */
export async function admitRequest(ctx: AuthedContext, group: LimitGroup = 'default'): Promise<Admission> {
  const admission = await ctx.services.limits.admit(ctx.principal, group);
  Object.assign(ctx.response.headers, limitHeaders(admission));
  if (admission.rejectedBy) throw rejection(admission);
  return admission;
}
