import { type Config, ConfigError, loadConfig } from '@crm/config';
import { createsEmbeddedDatabase, DataDirLockedError, MissingDatabaseError } from '@crm/db';
import { createLogger } from './logger.ts';
import { startServer, startWorkerProcess } from './server.ts';

let config: ReturnType<typeof loadConfig>;
try {
  config = loadConfig();
} catch (err) {
  if (err instanceof ConfigError) {
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  }
  throw err;
}
const logger = createLogger(config);

// A log nobody reads any more (`npm start | head`: EPIPE) is lost, and nothing else: the server goes on.
process.stdout.on('error', () => undefined);

/** How long exiting after a failed start waits for stdout to take the last lines. */
const LAST_LINES_MS = 1_000;

/**
 * Exits once stdout has taken the log's last lines (written, or failed), or after `boundMs` if it takes
 * none: a reader that stopped reading holds up no exit.
 */
function exitAfterLog(code: number, boundMs: number): void {
  setTimeout(() => process.exit(code), boundMs);
  process.stdout.write('', () => process.exit(code));
}

/** Says which database is opened, before the wait: a first embedded start creates it, which takes a while. */
function announceDatabase(c: Config): void {
  if (c.database.kind === 'postgresql') {
    const url = new URL(c.database.url);
    logger.info(
      { database: 'postgresql' },
      `connecting to PostgreSQL at ${url.host}${url.pathname} and migrating`,
    );
    return;
  }
  const dir = c.database.dataDir;
  const fresh = createsEmbeddedDatabase(c.database);
  logger.info(
    { database: 'pglite', data_dir: dir },
    dir.startsWith('memory://')
      ? 'creating an embedded database in memory (nothing is kept when the server stops; about half a minute)'
      : fresh
        ? `creating the embedded database in ${dir} (first start: about half a minute)`
        : `opening the embedded database in ${dir}`,
  );
}
announceDatabase(config);

try {
  let running: { stop(): Promise<void> };
  let sayReady: () => void;
  if (config.role === 'worker') {
    running = await startWorkerProcess(config, logger);
    sayReady = () =>
      logger.info({ role: config.role, database: config.database.kind }, 'webhook worker started');
  } else {
    const server = await startServer(config, logger);
    running = server;
    sayReady = () =>
      logger.info(
        { url: server.url, role: config.role, database: config.database.kind },
        `ready: dashboard ${server.url}/admin, API ${server.url}/api/v1/crm, reference ${server.url}/docs`,
      );
  }
  const shutdown = (signal: string) => {
    // The process ends by the shutdown timeout, whatever it still waits for (a database that stopped
    // answering: stopping waits for its statements, storing the usage counts, closing the pool).
    const timeoutMs = config.shutdownTimeoutMs;
    const deadline = Date.now() + timeoutMs;
    const cut = setTimeout(() => {
      logger.error(`shutdown did not finish within CRM_SHUTDOWN_TIMEOUT_MS (${timeoutMs} ms): exiting`);
      process.exit(1);
    }, timeoutMs);
    logger.info({ signal }, 'shutting down: finishing in-flight requests and webhook attempts');
    running
      .stop()
      .then(
        () => {
          logger.info('stopped cleanly');
          return 0;
        },
        (err: unknown) => {
          logger.error({ err }, 'shutdown failed');
          return 1;
        },
      )
      .then((code) => {
        clearTimeout(cut);
        exitAfterLog(code, Math.max(0, deadline - Date.now()));
      });
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
  // Said only once the signals are ours: a SIGTERM sent on seeing this line must find the handler (before
  // it, the default action ends the process at once).
  sayReady();
} catch (err) {
  // What the operator must fix, said in one line: a stack would bury it.
  if (err instanceof DataDirLockedError || err instanceof MissingDatabaseError) logger.fatal(err.message);
  else logger.fatal({ err }, 'failed to start');
  exitAfterLog(1, LAST_LINES_MS);
}
