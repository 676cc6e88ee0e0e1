import type { AuthedContext } from '../context.ts';
import { ApiError } from '../errors.ts';
import type { LimitGroup } from './groups.ts';
import type { Admission } from './limits.ts';

const QUOTA_HEADER_PREFIX = { api_calls: 'X-API-Quota', ai_calls: 'X-AI-Quota' } as const;

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
    headers[`${prefix}-Limit`] = String(q.limit);
    headers[`${prefix}-Used`] = String(q.used);
    headers[`${prefix}-Remaining`] = String(Math.max(0, q.limit - q.used));
    headers[`${prefix}-Reset`] = admission.period.resetAt;
  }
  return headers;
}

const secondsUntil = (ms: number) => Math.max(0, Math.ceil(ms / 1000));

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
  const retryAfter = secondsUntil(period.end.getTime() - nowMs);
  const what = rejectedBy === 'ai_calls' ? 'AI call' : 'API call';
  return new ApiError(
    rejectedBy === 'ai_calls' ? 'ai_quota_exceeded' : 'api_quota_exceeded',
    `Monthly ${what} quota exhausted: ${quota?.used} of ${quota?.limit} used in ${period.key} (UTC); it resets at ${period.resetAt}`,
    {
      extra: {
        retry_after_seconds: retryAfter,
        // The contract's `limit` is at least 1; a quota of 0 (feature switched off) leaves it out.
        ...(quota && quota.limit >= 1 ? { limit: quota.limit } : {}),
        used: quota?.used ?? 0,
        remaining: 0,
        reset_at: period.resetAt,
      },
      headers: { 'Retry-After': String(retryAfter) },
    },
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
