export interface ClientOptions {
  /** Where the server answers, e.g. `http://localhost:3000`. */
  baseUrl: string;
  /** An API key (`ck_…`); it decides which organization the calls see. */
  apiKey: string;
  /**
   * How many times a call answered 429 (rate limit) or 503 (database unavailable) is sent again, after
   * the answer's `Retry-After` or a growing pause; 0 turns retrying off. Default 2.
   */
  maxRetries?: number;
  /**
   * The longest `Retry-After` worth waiting for, in ms: a call told to wait longer (a monthly quota, spent
   * until the 1st) fails at once with its 429. Default 60 000, a rate-limit window.
   */
  maxRetryDelayMs?: number;
  /** How long one attempt may take before it fails with a `TimeoutError`, in ms; 0 for no limit. Default 30 000. */
  timeoutMs?: number;
  /** The fetch to send requests with (a proxy's, a test's); default the global `fetch`. */
  fetch?: typeof globalThis.fetch;
}

/** What a call's retries and timeout come to when the options leave them out. */
export const DEFAULTS = { maxRetries: 2, maxRetryDelayMs: 60_000, timeoutMs: 30_000 } as const;

export const trimSlash = (url: string): string => url.replace(/\/+$/, '');
