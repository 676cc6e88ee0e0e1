import { CrmError } from './errors.ts';
import { type ClientOptions, DEFAULTS, trimSlash } from './options.ts';
import { rememberAttempts } from './response.ts';
import { IDEMPOTENT_CREATES } from './router.gen.ts';

export const TRPC_PATH = '/trpc';
export const REST_PATH = '/api/v1/crm';

// `POST <path>` of every create that takes an Idempotency-Key, on both doors.
const IDEMPOTENT = new Set(
  IDEMPOTENT_CREATES.flatMap(([procedure, path]) => [
    `POST ${TRPC_PATH}/${procedure}`,
    `POST ${REST_PATH}${path}`,
  ]),
);

/** 1-255 printable ASCII characters, as the API takes them; random, so retries of one call share it. */
function newIdempotencyKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `crm-client-${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/** `Retry-After` in ms (seconds or an HTTP date), or undefined without one. */
function retryAfterMs(response: Response): number | undefined {
  const value = response.headers.get('Retry-After');
  if (value === null) return undefined;
  const text = value.trim();
  const ms = /^\d+$/.test(text) ? Number(text) * 1000 : Date.parse(text) - Date.now();
  return Number.isNaN(ms) ? undefined : Math.max(0, ms);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * The fetch both clients send through: the API key, the timeout, retries of 429 and 503 and the
 * Idempotency-Key that makes a create's retry safe; an error answer is thrown as a CrmError.
 *
 * What is retried: a 429 always, as the API refuses a call over a limit before doing anything; a 503 only
 * for a read (GET, which is every tRPC query too) or a create that honours its Idempotency-Key: any other
 * change (a PATCH, a DELETE, a webhook create, an analysis; tRPC sends all of them as POST) the server may
 * have carried out before the answer went wrong, and a key does not protect it (the API ignores one there).
 * With retrying on, a create that takes a key gets a random one unless the caller gave theirs.
 */
export function crmFetch(options: ClientOptions): typeof globalThis.fetch {
  const send = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const maxRetries = options.maxRetries ?? DEFAULTS.maxRetries;
  const maxRetryDelayMs = options.maxRetryDelayMs ?? DEFAULTS.maxRetryDelayMs;
  const timeoutMs = options.timeoutMs ?? DEFAULTS.timeoutMs;
  const basePath = new URL(trimSlash(options.baseUrl)).pathname.replace(/\/$/, '');

  return async (input, init) => {
    const request = new Request(input, init);
    const headers = new Headers(request.headers);
    headers.set('Authorization', `Bearer ${options.apiKey}`);
    const operation = `${request.method} ${new URL(request.url).pathname.slice(basePath.length)}`;
    if (maxRetries > 0 && IDEMPOTENT.has(operation) && !headers.has('Idempotency-Key'))
      headers.set('Idempotency-Key', newIdempotencyKey());
    const repeatable =
      request.method === 'GET' || (IDEMPOTENT.has(operation) && headers.has('Idempotency-Key'));
    // Read once: each attempt sends the same bytes.
    const body = request.body ? await request.arrayBuffer() : undefined;

    for (let attempt = 1; ; attempt++) {
      const signal =
        timeoutMs > 0 ? AbortSignal.any([request.signal, AbortSignal.timeout(timeoutMs)]) : request.signal;
      const response = await send(request.url, { method: request.method, headers, body, signal });
      rememberAttempts(response, attempt);
      if (response.ok) return response;
      const retryable = response.status === 429 || (response.status === 503 && repeatable);
      const wait =
        retryAfterMs(response) ?? Math.min(8_000, 500 * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2);
      if (!retryable || attempt > maxRetries || wait > maxRetryDelayMs) throw await CrmError.from(response);
      await response.body?.cancel();
      await sleep(wait, request.signal);
    }
  };
}
