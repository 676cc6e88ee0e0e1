import type { IncomingMessage } from 'node:http';
import type { Context } from '@crm/api';

/**
 * The per-request API context travels on the Node request, because the tRPC adapter hands `createContext`
 * only `req`/`res`. Koa builds it once; the tRPC and REST handlers read it back.
 */
const CONTEXT = Symbol('crm.context');
type WithContext = IncomingMessage & { [CONTEXT]?: Context };

export function attachContext(req: IncomingMessage, context: Context): void {
  (req as WithContext)[CONTEXT] = context;
}

export function contextOf(req: IncomingMessage): Context {
  const context = (req as WithContext)[CONTEXT];
  if (!context) throw new Error('request has no API context');
  return context;
}
