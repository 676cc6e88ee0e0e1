import type { Orm } from '@crm/db';

/**
 * The channel the database notifies, at commit, when a statement inserted outbox events (payload
 * `events`) or deliveries (`deliveries`): the triggers of packages/db's Migration20261125000000_webhook_worker.
 */
export const WAKEUP_CHANNEL = 'crm_webhooks';

/** What a wake-up says was queued: events to fan out, or only deliveries to claim. */
export type Queued = 'events' | 'deliveries';
const queued = (payload: string | undefined): Queued => (payload === 'deliveries' ? 'deliveries' : 'events');

/** How often the PostgreSQL wake-up connection checks it is still alive, and how long it waits for that. */
const PING_INTERVAL_MS = 30_000;
const PING_TIMEOUT_MS = 10_000;
/** Reconnecting waits this long after the first failure, doubling up to the maximum. */
const RECONNECT_MIN_MS = 250;
const RECONNECT_MAX_MS = 30_000;
/** How long closing waits for the server to acknowledge. */
const CLOSE_TIMEOUT_MS = 2_000;

/** Where the wake-ups report (a subset of the worker's logger). */
export interface WakeupLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** Wake-ups being received; `close` stops them. */
export interface Wakeups {
  /**
   * Every commit that queues work wakes this process, with nothing in between that could lose a
   * notification: the embedded database, which notifies in process. (A PostgreSQL connection can drop
   * unseen, or sit behind a pooler that swallows notifications: there, polling stays the safety net.)
   */
  readonly inProcess: boolean;
  close(): Promise<void>;
}

const NONE: Wakeups = { inProcess: false, close: async () => undefined };

/** What is used of a PGlite instance. */
interface PgliteLike {
  listen(channel: string, callback: (payload: string) => void): Promise<() => Promise<void>>;
}

/** What is used of pg's client. */
interface PgClientLike {
  connect(): Promise<unknown>;
  query(sql: string): Promise<unknown>;
  end(): Promise<void>;
  on(event: 'notification', listener: (msg: { channel: string; payload?: string }) => void): unknown;
  on(event: 'error', listener: (err: Error) => void): unknown;
  on(event: 'end', listener: () => void): unknown;
}

/** What is used of pg's pool: the client class it connects with, and its connection options. */
interface PgPoolLike {
  Client: new (options: object) => PgClientLike;
  options: object;
}

const isPglite = (native: unknown): native is PgliteLike =>
  typeof (native as PgliteLike | undefined)?.listen === 'function';
const isPgPool = (native: unknown): native is PgPoolLike =>
  typeof (native as PgPoolLike | undefined)?.Client === 'function' &&
  typeof (native as PgPoolLike | undefined)?.options === 'object';

/**
 * Calls `onWake` as soon as a transaction that queued webhook work commits: on PostgreSQL through
 * `LISTEN` on a dedicated connection (reconnected with backoff when it is lost; `onWake` is called once
 * it is back, for whatever was committed in between), on the embedded database through PGlite's own
 * notifications, in this process. Never throws: without wake-ups the worker still polls.
 */
export async function listenForWork(
  orm: Orm,
  onWake: (what: Queued) => void,
  logger: WakeupLogger,
): Promise<Wakeups> {
  let native: unknown;
  try {
    native = await orm.em.getConnection().getNativeClient();
  } catch (err) {
    logger.warn({ err }, 'webhook wake-ups unavailable: polling only');
    return NONE;
  }
  if (isPglite(native)) {
    try {
      const unlisten = await native.listen(WAKEUP_CHANNEL, (payload) => onWake(queued(payload)));
      return { inProcess: true, close: () => unlisten().catch(() => undefined) };
    } catch (err) {
      logger.warn({ err }, 'webhook wake-ups unavailable: polling only');
      return NONE;
    }
  }
  if (isPgPool(native)) {
    const listener = new PgListener(native, onWake, logger);
    listener.start();
    return { inProcess: false, close: () => listener.close() };
  }
  logger.warn({}, 'webhook wake-ups unavailable for this database driver: polling only');
  return NONE;
}

/** One dedicated PostgreSQL connection that LISTENs, replaced whenever it is lost. */
class PgListener {
  private readonly pool: PgPoolLike;
  private readonly onWake: (what: Queued) => void;
  private readonly logger: WakeupLogger;
  private client: PgClientLike | undefined;
  private closed = false;
  private failures = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private pingTimer: NodeJS.Timeout | undefined;

  constructor(pool: PgPoolLike, onWake: (what: Queued) => void, logger: WakeupLogger) {
    this.pool = pool;
    this.onWake = onWake;
    this.logger = logger;
  }

  start(): void {
    void this.connect();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.pingTimer);
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    // A connection that went quiet must not hold up a shutdown.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      client.end().catch(() => undefined),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, CLOSE_TIMEOUT_MS);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    // The pool's own options (the same server, credentials and TLS), on a connection of its own: a
    // LISTEN holds its connection for good, and must not take one of the pool's.
    const options = Object.assign(Object.create(this.pool.options) as object, {
      keepAlive: true,
      connectionTimeoutMillis: PING_TIMEOUT_MS,
      application_name: 'crm webhook wake-ups',
    });
    const client = new this.pool.Client(options);
    let lost = false;
    const onLost = (err?: unknown) => {
      if (lost) return;
      lost = true;
      if (this.client === client) {
        this.client = undefined;
        clearInterval(this.pingTimer);
      }
      if (this.closed) return;
      client.end().catch(() => undefined);
      if (this.failures === 0)
        this.logger.warn({ err }, 'webhook wake-up connection lost: polling until it is back');
      this.retry();
    };
    client.on('error', onLost);
    client.on('end', () => onLost());
    client.on('notification', (msg) => {
      if (msg.channel === WAKEUP_CHANNEL) this.onWake(queued(msg.payload));
    });
    this.client = client;
    try {
      await client.connect();
      await client.query(`listen ${WAKEUP_CHANNEL}`);
    } catch (err) {
      onLost(err);
      return;
    }
    if (lost) return;
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    if (this.failures > 0) this.logger.info({}, 'webhook wake-up connection re-established');
    this.failures = 0;
    this.pingTimer = setInterval(() => this.ping(client, onLost), PING_INTERVAL_MS);
    this.pingTimer.unref();
    // Whatever was committed while nobody listened is picked up now, not at the next poll.
    this.onWake('events');
  }

  /** A connection dropped without a word (a firewall, a half-open socket) is found out and replaced. */
  private ping(client: PgClientLike, onLost: (err?: unknown) => void): void {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('the wake-up connection did not answer')), PING_TIMEOUT_MS);
    });
    Promise.race([client.query('select 1'), timeout])
      .catch(onLost)
      .finally(() => clearTimeout(timer));
  }

  private retry(): void {
    const delay = Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** this.failures);
    this.failures++;
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => void this.connect(), delay);
    this.retryTimer.unref();
  }
}
