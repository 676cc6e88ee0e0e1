import { Redis } from 'ioredis';
import type { Log } from './log.ts';

/** A Redis that does not answer within this is treated as down for that request (fallback, not a hang). */
const COMMAND_TIMEOUT_MS = 250;
/** How long start-up waits for a first connection before serving on the fallback. */
const CONNECT_WAIT_MS = 3_000;
/** While Redis is considered down, how often one PING checks whether it answers again. */
const PROBE_INTERVAL_MS = 1_000;

/**
 * The cluster-mode Redis connection, and whether it is usable. Commands fail at once while it is down
 * (no offline queue), so a request never waits for Redis to come back; the outage is logged once when
 * it starts and once when it ends, however many requests notice it. A Redis that hangs (its connection
 * open, no answers) costs one command timeout: after it, callers skip Redis (`available` is false) and
 * a background PING, once a second, tells when it answers again.
 */
export class RedisLink {
  readonly client: Redis;
  private down = false;
  private closing = false;
  private readonly log: Log;
  private readonly recoveryListeners: Array<() => void> = [];
  private probe: NodeJS.Timeout | undefined;

  constructor(url: string, log: Log) {
    this.log = log;
    this.client = new Redis(url, {
      enableOfflineQueue: false,
      commandTimeout: COMMAND_TIMEOUT_MS,
      maxRetriesPerRequest: 0,
      // Keep trying to reconnect, at most every 2 s.
      retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
    });
    this.client.on('error', (err: Error) => this.failed(err));
    this.client.on('close', () => this.failed(new Error('connection closed')));
    this.client.on('ready', () => this.succeeded());
  }

  /** Waits (briefly) for the first connection; without it the service starts on the fallback. */
  async connect(): Promise<void> {
    if (this.client.status === 'ready') return;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.client.off('ready', done);
        resolve();
      };
      const timer = setTimeout(done, CONNECT_WAIT_MS);
      this.client.once('ready', done);
    });
    if (!this.isReady()) this.failed(new Error(`not connected after ${CONNECT_WAIT_MS} ms`));
  }

  get available(): boolean {
    return !this.down && this.isReady();
  }

  private isReady(): boolean {
    return this.client.status === 'ready';
  }

  /** Called on any failed command or lost connection. */
  failed(err: Error): void {
    if (this.down || this.closing) return;
    this.down = true;
    this.log.warn(
      { err: err.message },
      'Redis is unavailable: rate limits and quota counts fall back to per-instance memory',
    );
    this.startProbing();
  }

  /** Called on every answer Redis gives; the first after an outage ends it. */
  succeeded(): void {
    if (!this.down || this.closing || !this.isReady()) return;
    this.down = false;
    this.stopProbing();
    this.log.info({}, 'Redis is back: rate limits and quota counts are shared again');
    for (const listener of this.recoveryListeners) listener();
  }

  /** A connection that stays open while Redis answers nothing never emits 'ready' again: ask it. */
  private startProbing(): void {
    if (this.probe) return;
    this.probe = setInterval(() => {
      if (!this.isReady()) return; // reconnecting: 'ready' will say when it is back
      this.client.ping().then(
        () => this.succeeded(),
        () => undefined,
      );
    }, PROBE_INTERVAL_MS);
    this.probe.unref();
  }

  private stopProbing(): void {
    clearInterval(this.probe);
    this.probe = undefined;
  }

  onRecovered(listener: () => void): void {
    this.recoveryListeners.push(listener);
  }

  async close(): Promise<void> {
    this.closing = true;
    this.stopProbing();
    if (this.client.status === 'ready') await this.client.quit().catch(() => this.client.disconnect());
    else this.client.disconnect();
  }
}
