import { ConfigError, loadConfig } from '@crm/config';
import { DataDirLockedError } from '@crm/db';
import { createLogger } from './logger.ts';
import { startServer } from './server.ts';

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

try {
  const running = await startServer(config, logger);
  logger.info(
    { url: running.url, database: config.database.kind },
    `CRM API listening on ${running.url}/api/v1/crm (docs at ${running.url}/docs)`,
  );
  const shutdown = (signal: string) => {
    logger.info({ signal }, 'shutting down: finishing in-flight requests');
    running.stop().then(
      () => {
        logger.info('stopped cleanly');
        process.exit(0);
      },
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
} catch (err) {
  if (err instanceof DataDirLockedError) {
    logger.fatal(err.message);
    process.exit(1);
  }
  logger.fatal({ err }, 'failed to start');
  process.exit(1);
}
