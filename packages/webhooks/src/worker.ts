import { setTimeout as delay } from 'node:timers/promises';
import type { WebhooksConfig } from '@crm/config';
import type { Orm } from '@crm/db';
import { dispatchOutbox, type EventMatcher } from './dispatch.ts';
import {
  type ClaimedDelivery,
  type ClaimOptions,
  claimDue,
  nextDueAt,
  recordOutcome,
  releaseAllClaims,
  releaseClaim,
} from './queue.ts';
import { pruneWebhookHistory } from './retention.ts';
import { retryDelayMs } from './schedule.ts';
import { openSecret } from './secrets.ts';
import { signedHeaders } from './signature.ts';
import { type AttemptOutcome, WebhookTransport } from './transport.ts';
import { listenForWork, type Queued, type Wakeups } from './wakeup.ts';

/** The shortest time between two passes woken by commits (see `loop`). */
const PASS_COALESCE_MS = 25;

/** Events fanned out per transaction. */
const DISPATCH_BATCH = 200;
/** Attempts in flight to one endpoint at once, across all workers: a slow receiver cannot take every slot. */
export const MAX_IN_FLIGHT_PER_ENDPOINT = 4;
const PRUNE_INTERVAL_MS = 60 * 60_000;
/**
 * The longest an idle embedded worker sleeps (see `idleMs`): a safety net only, since every commit that
 * queues work wakes it and it knows when the next retry is due.
 */
export const IDLE_MAX_MS = 30_000;
const DUE_MARGIN_MS = 5;

/** What the worker logs through (pino's logger fits). */
export interface WorkerLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface WebhookWorkerOptions {
  orm: Orm;
  config: WebhooksConfig;
  logger: WorkerLogger;
  /**
   * This worker is the only one on its database (embedded mode): a lease it finds at start was left by
   * a process that died, so it is released at once instead of when it runs out.
   */
  sole: boolean;
  /**
   * Run after each pass that fanned out events, for what else follows new events: the server gives the
   * event feed's sequencer, so a backlog (a bulk import's events) is placed in the background instead of
   * by the feed's next readers. Its failure is logged, not the pass's.
   */
  afterDispatch?: () => Promise<unknown>;
  /**
   * Whether an event's record meets an endpoint's filter plan (the API's query language, which this
   * package does not know): the server gives it; filtered-out events get no delivery.
   */
  matches: EventMatcher;
}

/**
 * A claim outlives the longest attempt (the timeout bounds connect, headers and body) with room for
 * recording it, so a live worker never loses a claim it is still working on; a dead worker's claim
 * becomes claimable again when it runs out.
 */
export const leaseMsFor = (timeoutMs: number) => timeoutMs + Math.max(timeoutMs, 5_000);

interface InFlight {
  done: Promise<void>;
  controller: AbortController;
}

/**
 * Delivers webhooks: fans committed outbox events out to deliveries, claims due deliveries, makes the
 * signed attempts (up to `concurrency` at once) and records what they gave, and prunes old history
 * hourly. Any number of workers can share one PostgreSQL database.
 */
export class WebhookWorker {
  private readonly orm: Orm;
  private readonly config: WebhooksConfig;
  private readonly logger: WorkerLogger;
  private readonly sole: boolean;
  private readonly afterDispatch: (() => Promise<unknown>) | undefined;
  private readonly matches: EventMatcher;
  private readonly transport: WebhookTransport;
  private readonly inFlight = new Map<string, InFlight>();
  private stopping = false;
  private loopDone: Promise<void> | undefined;
  private wakeups: Wakeups | undefined;
  private lastPassAt = 0;
  /** Something happened since the current pass began (see `signal`): run another instead of sleeping. */
  private signalled = false;
  /** Ends the current sleep early. */
  private wakeSleeper: (() => void) | undefined;
  /** Outbox events may be waiting to be fanned out: the database said so, or the last batch was full. */
  private dispatchDue = true;
  private lastDispatchAt = 0;
  private lastPruneAt = 0;
  /** The last pass failed: further failures are not logged again until one succeeds. */
  private failing = false;
  /** What a success claims for the slot it frees. */
  private readonly handOff: ClaimOptions;

  constructor(options: WebhookWorkerOptions) {
    this.orm = options.orm;
    this.config = options.config;
    this.logger = options.logger;
    this.sole = options.sole;
    this.afterDispatch = options.afterDispatch;
    this.matches = options.matches;
    this.handOff = {
      limit: 1,
      leaseMs: leaseMsFor(options.config.timeoutMs),
      perEndpoint: MAX_IN_FLIGHT_PER_ENDPOINT,
    };
    this.transport = new WebhookTransport({
      allowPrivate: options.config.allowPrivate,
      timeoutMs: options.config.timeoutMs,
    });
  }

  async start(): Promise<void> {
    if (this.sole) {
      const released = await releaseAllClaims(this.orm);
      if (released > 0)
        this.logger.info({ released }, 'released webhook deliveries left by a stopped process');
    }
    this.wakeups = await listenForWork(this.orm, (what) => this.notified(what), this.logger);
    this.loopDone = this.loop();
  }

  /**
   * Stops claiming, lets attempts in flight finish for up to `graceMs`, then aborts the rest and gives
   * their claims back (they are attempted again, with the same webhook-id, by the next worker).
   */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    this.signal();
    await this.loopDone;
    await this.wakeups?.close();
    const running = [...this.inFlight.values()];
    const timer = setTimeout(() => {
      for (const r of running) r.controller.abort();
    }, graceMs);
    await Promise.allSettled(running.map((r) => r.done));
    clearTimeout(timer);
    await this.transport.close();
  }

  /**
   * Passes run back to back while there is work they can start, and otherwise wait for a signal: the
   * database notifying a commit that queued events or deliveries, or an attempt of this worker ending
   * (its slot, and its endpoint's, are free again). Polling at `pollIntervalMs` stays as the fallback
   * (a lost wake-up connection, retries coming due), except where no wake-up can be lost (`idleMs`); it
   * never spins.
   */
  private async loop(): Promise<void> {
    while (!this.stopping) {
      // A stream of commits is worked off in passes at most every PASS_COALESCE_MS, each taking all that
      // came meanwhile: a pass per commit would compete with the requests that commit, for the embedded
      // database's one connection above all, and a few milliseconds of delivery delay buy that back.
      const since = Date.now() - this.lastPassAt;
      if (this.signalled && since < PASS_COALESCE_MS) await delay(PASS_COALESCE_MS - since);
      this.lastPassAt = Date.now();
      this.signalled = false;
      let more = false;
      try {
        more = await this.pass();
        if (this.failing) this.logger.info({}, 'webhook worker passes work again');
        this.failing = false;
      } catch (err) {
        // An outage (a database down or hung) fails every pass: said once, and its end once.
        if (!this.failing)
          this.logger.error({ err }, 'webhook worker pass failed; retrying every poll interval');
        this.failing = true;
      }
      if (more || this.signalled || this.stopping) continue;
      const ms = await this.idleMs();
      // A wake-up that came while idleMs asked the database is not slept through.
      if (!this.signalled && !this.stopping) await this.sleep(ms);
    }
  }

  /**
   * How long to sleep with nothing to do: the poll interval; or, for the embedded database's worker (the
   * only one, woken in process by every commit that queues work, so nothing is missed in between), until
   * the next retry is due, up to IDLE_MAX_MS. An idle embedded server polled twice a second before, at
   * ~20 ms of CPU per second (two transactions per pass on PGlite).
   */
  private async idleMs(): Promise<number> {
    const poll = this.config.pollIntervalMs;
    if (!this.sole || !this.wakeups?.inProcess || this.failing || this.inFlight.size > 0) return poll;
    let due: Date | null;
    try {
      due = await nextDueAt(this.orm);
    } catch {
      return poll; // the next pass says what failed
    }
    if (due === null) return IDLE_MAX_MS;
    const until = due.getTime() - Date.now();
    // Due already, yet nothing was claimed: left to the poll interval, never a spin. Otherwise woken just
    // after it is due (the database's microseconds are cut to milliseconds here).
    return until <= 0 ? poll : Math.min(until + DUE_MARGIN_MS, IDLE_MAX_MS);
  }

  /** Ends the sleep at once, or, when a pass is running, has another one run after it. */
  private signal(): void {
    this.signalled = true;
    this.wakeSleeper?.();
  }

  /** The database says a commit queued outbox events (to fan out) or deliveries (to claim). */
  private notified(what: Queued): void {
    if (what === 'events') this.dispatchDue = true;
    this.signal();
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const finish = () => {
        clearTimeout(timer);
        this.wakeSleeper = undefined;
        resolve();
      };
      const timer = setTimeout(finish, ms);
      this.wakeSleeper = finish;
    });
  }

  /** One round of work; true when there is more to do at once. */
  private async pass(): Promise<boolean> {
    let more = false;
    // Without a notification, the outbox is still looked at once per poll interval.
    if (this.dispatchDue || Date.now() - this.lastDispatchAt >= this.config.pollIntervalMs) {
      this.dispatchDue = false;
      this.lastDispatchAt = Date.now();
      let dispatched: number;
      try {
        dispatched = await dispatchOutbox(this.orm, DISPATCH_BATCH, this.matches);
      } catch (err) {
        this.dispatchDue = true;
        throw err;
      }
      if (dispatched === DISPATCH_BATCH) {
        this.dispatchDue = true;
        more = true;
      }
      if (dispatched > 0 && this.afterDispatch)
        await this.afterDispatch().catch((err: unknown) =>
          this.logger.warn({ err }, 'the step after a webhook dispatch pass failed'),
        );
    }
    const free = this.config.concurrency - this.inFlight.size;
    if (free > 0) {
      const claims = await claimDue(this.orm, {
        limit: free,
        leaseMs: leaseMsFor(this.config.timeoutMs),
        perEndpoint: MAX_IN_FLIGHT_PER_ENDPOINT,
      });
      for (const claim of claims) this.attempt(claim);
    }
    await this.pruneWhenDue();
    return more;
  }

  /**
   * Makes the attempt in one of this worker's slots. A success hands the slot on: the statement that
   * records it also claims the next due delivery, which is attempted at once in the same slot. Otherwise
   * the slot is free again and the loop is signalled to fill it.
   */
  private attempt(claim: ClaimedDelivery): void {
    const controller = new AbortController();
    const done = this.deliver(claim, controller.signal)
      .catch((err: unknown): ClaimedDelivery[] => {
        // The claim stays leased and is attempted again once the lease runs out.
        this.logger.error({ err, delivery_id: claim.id }, 'recording a webhook attempt failed');
        return [];
      })
      .then(async (next) => {
        this.inFlight.delete(claim.id);
        if (this.stopping)
          // Claimed as the worker began to stop: given back for the next worker, like any unmade attempt.
          await Promise.all(
            next.map((n) =>
              releaseClaim(this.orm, n).catch((err: unknown) =>
                this.logger.error({ err, delivery_id: n.id }, 'giving a webhook delivery back failed'),
              ),
            ),
          );
        else for (const n of next) this.attempt(n);
        // Nothing handed on: a slot of this worker (and one of the endpoint's) is free for the loop to fill.
        if (next.length === 0) this.signal();
      });
    this.inFlight.set(claim.id, { done, controller });
  }

  /** Makes one attempt and records it; returns the deliveries handed on to this slot. */
  private async deliver(claim: ClaimedDelivery, stop: AbortSignal): Promise<ClaimedDelivery[]> {
    const startedAt = new Date();
    let outcome: AttemptOutcome;
    try {
      const secret = openSecret(claim.secret, claim.endpointId, this.config.encryptionKey);
      const headers = signedHeaders(secret, claim.eventId, claim.payload, startedAt);
      outcome = await this.transport.post(claim.url, headers, claim.payload, stop);
    } catch (err) {
      outcome = {
        succeeded: false,
        status: null,
        durationMs: Date.now() - startedAt.getTime(),
        error: (err as Error).message,
        responseBody: null,
        retryAfterMs: null,
      };
    }
    if (stop.aborted && outcome.status === null) {
      await releaseClaim(this.orm, claim);
      return [];
    }
    const result = await recordOutcome(
      this.orm,
      claim,
      outcome,
      startedAt,
      {
        retryDelayMs: (failed, retryAfter) => retryDelayMs(this.config.retryScheduleMs, failed, retryAfter),
        maxConsecutiveFailures: this.config.maxConsecutiveFailures,
      },
      this.stopping ? undefined : this.handOff,
    );
    if (result.recorded && result.deactivated)
      this.logger.warn(
        { endpoint_id: claim.endpointId, org_id: claim.orgId, status: outcome.status },
        'webhook endpoint deactivated after consecutive failures',
      );
    return result.next;
  }

  private async pruneWhenDue(): Promise<void> {
    if (Date.now() - this.lastPruneAt < PRUNE_INTERVAL_MS) return;
    this.lastPruneAt = Date.now();
    const pruned = await pruneWebhookHistory(
      this.orm,
      this.config.retentionDays,
      this.config.eventsRetentionDays,
    );
    if (pruned.attempts + pruned.deliveries + pruned.events > 0)
      this.logger.info({ ...pruned }, 'pruned webhook history past its retention');
  }
}
