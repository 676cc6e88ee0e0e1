import type { Config } from '@crm/config';
import type { EntityManager, Orm } from '@crm/db';
import type { Admission, Limits } from './limits/limits.ts';

/** What every request handler can reach: built once at start-up. */
export interface Services {
  orm: Orm;
  config: Config;
  /** Rate limits and monthly quotas. */
  limits: Limits;
}

/** Who is calling: set by the auth middleware from the API key, never from the request body. */
export interface Principal {
  orgId: string;
  apiKeyId: string;
}

export interface Context {
  services: Services;
  /** One unit of work per request. */
  em: EntityManager;
  requestId: string;
  /** Request headers, lower-cased names. */
  headers: Record<string, string | string[] | undefined>;
  /** Status and headers a procedure wants on its response (e.g. 201, Idempotent-Replayed). */
  response: { status?: number; headers: Record<string, string> };
  principal?: Principal;
  /** Set when the HTTP edge already checked and counted this call (REST: one call per request). */
  admission?: Admission;
}

export type AuthedContext = Context & { principal: Principal };

export function createRequestContext(
  services: Services,
  request: { requestId: string; headers: Context['headers'] },
): Context {
  return {
    services,
    em: services.orm.em.fork(),
    requestId: request.requestId,
    headers: request.headers,
    response: { headers: {} },
  };
}

export function headerValue(ctx: Pick<Context, 'headers'>, name: string): string | undefined {
  const value = ctx.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
