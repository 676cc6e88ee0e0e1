import type { Config } from '@crm/config';
import { pino } from 'pino';

export type Logger = pino.Logger;

/**
 * JSON lines on stdout. Requests are logged by the app; headers and bodies never are.
 *
 * Written through `process.stdout`, which on a pipe queues what the reader does not take yet and leaves
 * it at exit. pino's own stdout writer instead flushed synchronously at exit, and retried a write that
 * failed with EPIPE forever (sonic-boom 4): a server whose log reader had gone (`npm start | head`) never
 * ended after SIGTERM. What may wait for the log, and how long, is main.ts's to say.
 */
export function createLogger(config: Pick<Config, 'logLevel'>): Logger {
  return pino(
    {
      level: config.logLevel,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      // Belt and braces: should anything ever log a request or a key, it is blanked.
      redact: {
        paths: ['req.headers.authorization', 'authorization', 'api_key', 'secret', '*.api_key', '*.secret'],
        censor: '[redacted]',
      },
    },
    process.stdout,
  );
}
