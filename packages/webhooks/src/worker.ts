import type { WebhooksConfig } from '@crm/config';
import type { Orm } from '@crm/db';
import { dispatchOutbox } from './dispatch.ts';
import { type ClaimedDelivery, claimDue, recordOutcome, releaseAllClaims, releaseClaim } from './queue.ts';
import { pruneWebhookHistory } from './retention.ts';
import { retryDelayMs } from './schedule.ts';
import { openSecret } from './secrets.ts';
import { signedHeaders } from './signature.ts';
import { type AttemptOutcome, WebhookTransport } from './transport.ts';

/** Events fanned out per transaction. */
const DISPATCH_BATCH = 200;
/** Attempts in flight to one endpoint at once, across all workers: a slow receiver cannot take every slot. */
export const MAX_IN_FLIGHT_PER_ENDPOINT = 4;
const PRUNE_INTERVAL_MS = 60 * 60_000;

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
  private readonly transport: WebhookTransport;
  private readonly inFlight = new Map<string, InFlight>();
  private stopping = false;
  private loopDone: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  /** The last claim took every free slot: more may be due as soon as one frees. */
  private backlog = false;
  private lastPruneAt = 0;

  constructor(options: WebhookWorkerOptions) {
    this.orm = options.orm;
    this.config = options.config;
    this.logger = options.logger;
    this.sole = options.sole;
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
    this.loopDone = this.loop();
  }

  /**
   * Stops claiming, lets attempts in flight finish for up to `graceMs`, then aborts the rest and gives
   * their claims back (they are attempted again, with the same webhook-id, by the next worker).
   */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.loopDone;
    const running = [...this.inFlight.values()];
    const timer = setTimeout(() => {
      for (const r of running) r.controller.abort();
    }, graceMs);
    await Promise.allSettled(running.map((r) => r.done));
    clearTimeout(timer);
    await this.transport.close();
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      let more = false;
      try {
        more = await this.pass();
      } catch (err) {
        this.logger.error({ err }, 'webhook worker pass failed');
      }
      if (!more && !this.stopping) await this.sleep(this.config.pollIntervalMs);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(finish, ms);
      function finish() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = finish;
    });
  }

  /** One round of work; true when there is more to do at once. */
  private async pass(): Promise<boolean> {
    const dispatched = await dispatchOutbox(this.orm, DISPATCH_BATCH);
    const free = this.config.concurrency - this.inFlight.size;
    if (free > 0) {
      const claims = await claimDue(this.orm, {
        limit: free,
        leaseMs: leaseMsFor(this.config.timeoutMs),
        perEndpoint: MAX_IN_FLIGHT_PER_ENDPOINT,
      });
      for (const claim of claims) this.attempt(claim);
      this.backlog = claims.length === free;
    }
    await this.pruneWhenDue();
    return dispatched === DISPATCH_BATCH;
  }

  private attempt(claim: ClaimedDelivery): void {
    const controller = new AbortController();
    const done = this.deliver(claim, controller.signal)
      .catch((err: unknown) => {
        // The claim stays leased and is attempted again once the lease runs out.
        this.logger.error({ err, delivery_id: claim.id }, 'recording a webhook attempt failed');
      })
      .finally(() => {
        this.inFlight.delete(claim.id);
        if (this.backlog) this.wake?.();
      });
    this.inFlight.set(claim.id, { done, controller });
  }

  private async deliver(claim: ClaimedDelivery, stop: AbortSignal): Promise<void> {
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
      return;
    }
    const result = await recordOutcome(this.orm, claim, outcome, startedAt, {
      retryDelayMs: (failed, retryAfter) => retryDelayMs(this.config.retryScheduleMs, failed, retryAfter),
      maxConsecutiveFailures: this.config.maxConsecutiveFailures,
    });
    if (result.recorded && result.deactivated)
      this.logger.warn(
        { endpoint_id: claim.endpointId, org_id: claim.orgId, status: outcome.status },
        'webhook endpoint deactivated after consecutive failures',
      );
  }

  private async pruneWhenDue(): Promise<void> {
    if (Date.now() - this.lastPruneAt < PRUNE_INTERVAL_MS) return;
    this.lastPruneAt = Date.now();
    const pruned = await pruneWebhookHistory(this.orm, this.config.retentionDays);
    if (pruned.attempts + pruned.deliveries + pruned.events > 0)
      this.logger.info({ ...pruned }, 'pruned webhook history past its retention');
  }
}
