import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** One request the receiver got, and what `standardwebhooks` made of it. */
export interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  /** The verified payload, or undefined when verification failed (see `verifyError`). */
  // biome-ignore lint/suspicious/noExplicitAny: payloads are arbitrary JSON
  payload: any;
  verifyError: string | undefined;
  at: number;
}

/** How the receiver answers on a path: a status (default 200), after a delay, or never. */
export type Behaviour = {
  status?: number;
  delayMs?: number;
  hang?: boolean;
  body?: string;
  headers?: Record<string, string>;
};

/**
 * A real webhook receiver on 127.0.0.1: records every request, verifies it with the `standardwebhooks`
 * package against the secret registered for its path, and answers as told per path.
 */
export interface Receiver {
  port: number;
  url(path: string): string;
  /** Verify requests to `path` with this secret from now on. */
  secretFor(path: string, secret: string): void;
  /** How to answer the next requests to `path` (each call replaces the previous behaviour). */
  behave(path: string, behaviour: Behaviour | ((n: number) => Behaviour)): void;
  received(path?: string): Received[];
  /** Waits until `predicate` holds for what `path` received, or fails after `timeoutMs`. */
  waitFor(path: string, predicate: (got: Received[]) => boolean, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const got: Received[] = [];
  const secrets = new Map<string, string>();
  const behaviours = new Map<string, Behaviour | ((n: number) => Behaviour)>();
  const counts = new Map<string, number>();
  const hanging = new Set<ServerResponse>();

  const handle = (req: IncomingMessage, res: ServerResponse, body: string) => {
    const path = req.url ?? '/';
    const headers = Object.fromEntries(
      Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : (v ?? '')]),
    );
    let payload: unknown;
    let verifyError: string | undefined;
    const secret = secrets.get(path);
    try {
      if (!secret) throw new Error(`no secret registered for ${path}`);
      payload = new Webhook(secret).verify(body, headers);
    } catch (err) {
      verifyError = (err as Error).message;
    }
    got.push({ path, headers, body, payload, verifyError, at: Date.now() });
    const n = (counts.get(path) ?? 0) + 1;
    counts.set(path, n);
    const rule = behaviours.get(path) ?? {};
    const behaviour = typeof rule === 'function' ? rule(n) : rule;
    if (behaviour.hang) {
      hanging.add(res);
      return;
    }
    const answer = () => {
      res.statusCode = behaviour.status ?? 200;
      for (const [name, value] of Object.entries(behaviour.headers ?? {})) res.setHeader(name, value);
      res.end(behaviour.body ?? 'ok');
    };
    if (behaviour.delayMs) setTimeout(answer, behaviour.delayMs);
    else answer();
  };

  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body += chunk;
    });
    req.on('end', () => handle(req, res, body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  return {
    port,
    url: (path) => `http://127.0.0.1:${port}${path}`,
    secretFor: (path, secret) => secrets.set(path, secret),
    behave: (path, behaviour) => behaviours.set(path, behaviour),
    received: (path) => (path ? got.filter((r) => r.path === path) : [...got]),
    async waitFor(path, predicate, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const mine = got.filter((r) => r.path === path);
        if (predicate(mine)) return mine;
        if (Date.now() > deadline)
          throw new Error(
            `receiver: condition on ${path} not met within ${timeoutMs} ms; got ${mine.length} requests: ${mine
              .map((r) => r.payload?.type ?? r.verifyError)
              .join(', ')}`,
          );
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Polls `check` until it returns a value that is not undefined, or fails after `timeoutMs`. */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
