/** A rate-limit group's state after a call (IETF draft `RateLimit` and `RateLimit-Policy` headers). */
export interface RateLimit {
  /** The group the call counted against: `crud`, `ai`, `search`, `webhooks`, `events` or `default`. */
  group: string;
  limit: number;
  remaining: number;
  /** Seconds until the window starts afresh. */
  resetSeconds: number;
  windowSeconds: number;
}

/** A monthly quota after a call (`X-API-Quota-*`, `X-AI-Quota-*`). */
export interface Quota {
  limit: number;
  used: number;
  remaining: number;
  /** When the quota starts afresh (ISO 8601, the 1st of next month, UTC). */
  reset: string;
}

/** What the server said about a call beside its body. */
export interface CrmResponse {
  status: number;
  /** The server's `X-Request-Id`: quote it when asking about a call. */
  requestId: string | null;
  /** How many times the call was sent: more than 1 when a 429 or 503 was retried. */
  attempts: number;
  /** True when an `Idempotency-Key` replayed an earlier answer instead of creating again. */
  replayed: boolean;
  rateLimit: RateLimit | null;
  apiQuota: Quota | null;
  /** Only on AI operations. */
  aiQuota: Quota | null;
  headers: Headers;
}

// The answer each result came from (tRPC results), and how many attempts each answer took.
const answers = new WeakMap<object, Response>();
const attemptCounts = new WeakMap<Response, number>();

export function rememberAttempts(response: Response, attempts: number): void {
  attemptCounts.set(response, attempts);
}

export function rememberResponse(result: unknown, response: Response): void {
  if (result !== null && typeof result === 'object') answers.set(result, response);
}

/** The number after `key=` in a structured header's parameters (`"crud";r=57;t=13`). */
const param = (header: string, key: string) => Number(new RegExp(`;${key}=(\\d+)`).exec(header)?.[1]);

function quota(headers: Headers, prefix: string): Quota | null {
  const limit = headers.get(`${prefix}-Limit`);
  if (limit === null) return null;
  return {
    limit: Number(limit),
    used: Number(headers.get(`${prefix}-Used`)),
    remaining: Number(headers.get(`${prefix}-Remaining`)),
    reset: headers.get(`${prefix}-Reset`) ?? '',
  };
}

export function describeResponse(response: Response): CrmResponse {
  const { headers } = response;
  const state = headers.get('RateLimit');
  const policy = headers.get('RateLimit-Policy') ?? '';
  return {
    status: response.status,
    requestId: headers.get('X-Request-Id'),
    attempts: attemptCounts.get(response) ?? 1,
    replayed: headers.get('Idempotent-Replayed') === 'true',
    rateLimit: state
      ? {
          group: /^"([^"]*)"/.exec(state)?.[1] ?? '',
          limit: param(policy, 'q'),
          remaining: param(state, 'r'),
          resetSeconds: param(state, 't'),
          windowSeconds: param(policy, 'w'),
        }
      : null,
    apiQuota: quota(headers, 'X-API-Quota'),
    aiQuota: quota(headers, 'X-AI-Quota'),
    headers,
  };
}

/**
 * The answer behind a result: its status, request id, rate limit and quotas. Takes what a tRPC call
 * returned, or a REST call's `{ data, response }`.
 */
export function responseOf(result: object): CrmResponse {
  const response =
    'response' in result && result.response instanceof Response ? result.response : answers.get(result);
  if (!response) throw new TypeError('responseOf: not a result of a @crm/client call');
  return describeResponse(response);
}
