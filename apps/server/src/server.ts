import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  anyOrganizationExists,
  createInvitation,
  createOrganizationWithKey,
  createServices,
  FIRST_ADMIN_TTL_MS,
  INVITATION_PATH,
  maintainKeptAnalytics,
  pruneIdempotencyKeys,
  runCommandLine,
  type Services,
} from '@crm/api';
import type { Config } from '@crm/config';
import { type Database, openDatabase, transaction } from '@crm/db';
import type { WebhookWorker } from '@crm/webhooks';
import { type AppState, buildApp } from './app.ts';
import type { Logger } from './logger.ts';
import { type RunningWorker, startWebhookWorker } from './webhook-worker.ts';

/** How often expired Idempotency-Key records and analytics sums past every read are deleted. */
const HOUSEKEEPING_INTERVAL_MS = 60 * 60_000;

/**
 * How long stopping lets in-flight requests and webhook attempts run: the shutdown timeout but its last
 * second (half of a timeout under 2 s), kept for giving unfinished attempts back, storing the last usage
 * counts and closing the database before the process ends at the timeout (main.ts).
 */
function drainMs(config: Config): number {
  return config.shutdownTimeoutMs - Math.min(1_000, config.shutdownTimeoutMs / 2);
}

export interface RunningServer {
  url: string;
  server: Server;
  db: Database;
  /** The webhook worker running in this process (`CRM_ROLE=all`), if any. */
  worker: WebhookWorker | undefined;
  /**
   * Stops accepting, lets in-flight requests and webhook attempts finish (up to the shutdown timeout but
   * its last second), closes the database.
   */
  stop(): Promise<void>;
}

/**
 * On an empty database, creates an organization with an API key and a one-time sign-in link for its first
 * admin, in one transaction, and prints both, so `npm start` is usable at once. It runs once the server
 * listens: a start that fails before (a port in use) creates nothing, and the next start shows them.
 */
async function bootstrapOrganization(db: Database, logger: Logger, url: string): Promise<void> {
  const em = db.orm.em.fork();
  if (await anyOrganizationExists(em)) return;
  const acting = { actor: 'first start' };
  const { created, invitation } = await transaction(em, async (tx) => {
    const created = await createOrganizationWithKey(tx, 'Default organization', acting);
    const invitation = await createInvitation(
      tx,
      { orgId: created.org_id, role: 'admin', ttlMs: FIRST_ADMIN_TTL_MS },
      acting,
    );
    return { created, invitation };
  });
  logger.info({ org_id: created.org_id, key_id: created.key_id }, 'created the default organization');
  // The key and the link go to the terminal once, never into the log stream.
  process.stderr.write(
    `\nFirst start: created organization ${created.org_id}.\nIts API key (shown once, stored only as a hash):\n\n  ${created.api_key}\n\n` +
      `Sign in to the dashboard as its first admin with this one-time link (valid 24 hours):\n\n  ${url}${INVITATION_PATH}${invitation.token}\n\n`,
  );
}

/** A worker-only process (`CRM_ROLE=worker`): no HTTP API, just webhook delivery. */
export async function startWorkerProcess(config: Config, logger: Logger): Promise<RunningWorker> {
  const db = await openDatabase(config.database, 'webhook worker');
  let worker: WebhookWorker;
  try {
    worker = await startWebhookWorker(db, config, logger);
  } catch (err) {
    await db.close();
    throw err;
  }
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= worker.stop(drainMs(config)).finally(() => db.close());
    return stopping;
  };
  return { db, worker, stop };
}

/** The HTTP API, with the webhook worker in the same process unless `CRM_ROLE=api`. */
export async function startServer(config: Config, logger: Logger): Promise<RunningServer> {
  const db = await openDatabase(config.database, 'server');
  let services: Services;
  try {
    services = await createServices(db.orm, config, logger);
  } catch (err) {
    await db.close();
    throw err;
  }
  const { limits } = services;
  // A `crm` command beside this server (embedded database: one process) is run here, on this database.
  db.serveLocalRequests(async (request) => {
    const argv = (request as { argv?: unknown } | null)?.argv;
    if (!Array.isArray(argv) || !argv.every((a) => typeof a === 'string'))
      return { code: 2, stdout: [], stderr: ['error: not a command line'] };
    logger.info({ command: argv.slice(0, 2).join(' ') }, 'running a crm command for a local process');
    return runCommandLine(argv, db.orm.em.fork(), config);
  });
  const state: AppState = { draining: false };
  const app = buildApp(services, logger, state);
  const server = app.listen({ port: config.port, host: config.host });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  // Keep-alive sockets from a load balancer must outlive its own idle timeout.
  server.keepAliveTimeout = 65_000;
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${address.port}`;
  if (config.bootstrapOrg) {
    try {
      await bootstrapOrganization(db, logger, config.admin.publicUrl ?? url);
    } catch (err) {
      server.close();
      await limits.close();
      await db.close();
      throw err;
    }
  }

  // Stored Idempotency-Key responses are kept for their 24-hour window only; the kept analytics' sums are
  // folded, and kept for the windows their reads look at.
  const prune = () =>
    Promise.all([
      pruneIdempotencyKeys(db.orm.em.fork()).then(
        (n) => n > 0 && logger.info({ deleted: n }, 'pruned expired idempotency keys'),
        (err: unknown) => logger.warn({ err }, 'pruning idempotency keys failed'),
      ),
      maintainKeptAnalytics(db.orm.em.fork()).then(
        (n) => n > 0 && logger.info({ deleted: n }, 'pruned analytics sums past every window'),
        (err: unknown) => logger.warn({ err }, 'folding or pruning analytics sums failed'),
      ),
    ]);
  const pruneTimer = setInterval(prune, HOUSEKEEPING_INTERVAL_MS);
  pruneTimer.unref();
  void prune();

  let worker: WebhookWorker | undefined;
  try {
    if (config.role === 'all') worker = await startWebhookWorker(db, config, logger);
  } catch (err) {
    clearInterval(pruneTimer);
    server.close();
    await db.close();
    throw err;
  }

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      clearInterval(pruneTimer);
      state.draining = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const timer = setTimeout(() => server.closeAllConnections(), drainMs(config));
      // Requests may still emit events while draining; the worker delivers what it holds and stops.
      await Promise.all([closed, worker?.stop(drainMs(config))]);
      clearTimeout(timer);
      // The last counted calls reach the database before it closes.
      await limits
        .close()
        .catch((err: unknown) => logger.error({ err }, 'storing the last usage counts failed'));
      await db.close();
    })();
    return stopping;
  };
  return { url, server, db, worker, stop };
}
