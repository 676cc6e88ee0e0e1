import type { Config } from '@crm/config';
import { pino } from 'pino';

export type Logger = pino.Logger;

/** JSON lines on stdout. Requests are logged by the app; headers and bodies never are. */
export function createLogger(config: Pick<Config, 'logLevel'>): Logger {
  return pino({
    level: config.logLevel,
    base: undefined,
    timestamp: pino.stdTimeFunctions.isoTime,
    // Belt and braces: should anything ever log a request or a key, it is blanked.
    redact: {
      paths: ['req.headers.authorization', 'authorization', 'api_key', 'secret', '*.api_key', '*.secret'],
      censor: '[redacted]',
    },
  });
}
