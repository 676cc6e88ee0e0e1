import { Agent, buildConnector, request } from 'undici';
import { assertPublicPeer, publicOnlyLookup } from './address-policy.ts';

/** How much of a response body is read at most; the rest is not waited for. */
export const RESPONSE_READ_LIMIT_BYTES = 64 * 1024;
/** How much of it is kept with the attempt. */
export const RESPONSE_SNIPPET_BYTES = 1024;

export interface AttemptOutcome {
  succeeded: boolean;
  /** The HTTP status, when a response came. */
  status: number | null;
  durationMs: number;
  /** Why there was no success when the status does not say it (timeout, refused address, connection error). */
  error: string | null;
  responseBody: string | null;
  /** A `Retry-After` the receiver asked for, in milliseconds. */
  retryAfterMs: number | null;
}

/** PostgreSQL text cannot hold NUL; a receiver's bytes are not ours to trust. */
const storable = (text: string) => text.replaceAll('\u0000', '');

function retryAfterMs(header: string | string[] | undefined, now: number): number | null {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

function describeError(err: unknown, timedOut: boolean, timeoutMs: number): string {
  if (timedOut) return `timed out after ${timeoutMs} ms`;
  const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
  const cause = e.code === 'UND_ERR_CONNECT_TIMEOUT' ? e : (e.cause ?? e);
  switch (cause.code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ENOTFOUND':
      return 'host not found';
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return 'connection reset by the receiver';
    case 'UND_ERR_CONNECT_TIMEOUT':
      return `connection timed out after ${timeoutMs} ms`;
    case 'ERR_WEBHOOK_TARGET_REFUSED':
      return `refused: ${cause.message}`;
    default:
      return storable(cause.message || String(cause.code ?? err));
  }
}

/**
 * POSTs webhook bodies over undici, with the address policy enforced on every connection: the DNS
 * lookup refuses hosts that resolve to non-public addresses, and the socket's peer address is checked
 * again once connected (IP literals skip DNS). Redirects are not followed (a 3xx is a failure), the
 * whole attempt, connect to last body byte, is bounded by `timeoutMs`, and at most
 * RESPONSE_READ_LIMIT_BYTES of a response are read.
 */
export class WebhookTransport {
  private readonly agent: Agent;
  private readonly timeoutMs: number;

  constructor(options: { allowPrivate: boolean; timeoutMs: number }) {
    this.timeoutMs = options.timeoutMs;
    const base = buildConnector({
      timeout: options.timeoutMs,
      ...(options.allowPrivate ? {} : { lookup: publicOnlyLookup }),
    });
    const connect: buildConnector.connector = options.allowPrivate
      ? base
      : (opts, callback) =>
          base(opts, (err, socket) => {
            if (err || !socket) return callback(err ?? new Error('no socket'), null);
            try {
              assertPublicPeer(opts.hostname, socket.remoteAddress);
            } catch (refusal) {
              socket.destroy();
              return callback(refusal as Error, null);
            }
            return callback(null, socket);
          });
    this.agent = new Agent({
      connect,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      keepAliveTimeout: 4_000,
    });
  }

  async post(
    url: string,
    headers: Record<string, string>,
    body: string,
    stop?: AbortSignal,
  ): Promise<AttemptOutcome> {
    const started = performance.now();
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, this.timeoutMs);
    const onStop = () => controller.abort();
    stop?.addEventListener('abort', onStop, { once: true });
    const done = (partial: Omit<AttemptOutcome, 'durationMs'>): AttemptOutcome => ({
      ...partial,
      durationMs: Math.round(performance.now() - started),
    });
    try {
      const response = await request(url, {
        dispatcher: this.agent,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'headless-crm-webhooks/1', ...headers },
        body,
        signal: controller.signal,
      });
      // The status decides the outcome; a body that is slow, cut off or too long only shortens the snippet.
      const kept: Buffer[] = [];
      let keptBytes = 0;
      let readBytes = 0;
      try {
        for await (const chunk of response.body as AsyncIterable<Buffer>) {
          readBytes += chunk.length;
          if (keptBytes < RESPONSE_SNIPPET_BYTES) {
            const part = chunk.subarray(0, RESPONSE_SNIPPET_BYTES - keptBytes);
            kept.push(part);
            keptBytes += part.length;
          }
          if (readBytes >= RESPONSE_READ_LIMIT_BYTES) break; // leaving the loop destroys the stream
        }
      } catch {
        // Timed out or reset while reading the body: what arrived is kept.
      }
      const status = response.statusCode;
      const succeeded = status >= 200 && status < 300;
      return done({
        succeeded,
        status,
        error: succeeded ? null : `receiver answered ${status}`,
        responseBody: keptBytes > 0 ? storable(Buffer.concat(kept).toString('utf8')) : null,
        retryAfterMs: succeeded ? null : retryAfterMs(response.headers['retry-after'], Date.now()),
      });
    } catch (err) {
      return done({
        succeeded: false,
        status: null,
        error: describeError(err, timedOut, this.timeoutMs),
        responseBody: null,
        retryAfterMs: null,
      });
    } finally {
      clearTimeout(timer);
      stop?.removeEventListener('abort', onStop);
    }
  }

  close(): Promise<void> {
    return this.agent.destroy();
  }
}
