import type { Config } from '@crm/config';
import type { EntityManager, Orm } from '@crm/db';
import type { DashboardAuth, DashboardSession } from './admin/dashboard-auth.ts';
import type { Door } from './call-context.ts';
import type { Admission, Limits } from './limits/limits.ts';
import type { Log } from './limits/log.ts';

/** What every request handler can reach: built once at start-up. */
export interface Services {
  orm: Orm;
  config: Config;
  /** Rate limits and monthly quotas. */
  limits: Limits;
  /** Sessions and passwords of the dashboard (better-auth). */
  dashboardAuth: DashboardAuth;
  /** The process's log, for what the services notice on their own (a language model that stopped answering). */
  log: Log;
}

/** Who is calling: set by the auth middleware from the API key, never from the request body. */
export interface Principal {
  orgId: string;
  apiKeyId: string;
  /** What the key may call (`*`: everything). */
  scopes: readonly string[];
}

export interface Context {
  services: Services;
  /** One unit of work per request. */
  em: EntityManager;
  requestId: string;
  /** The door the call came through: who made a change says it. */
  door: Door;
  /** Request headers, lower-cased names. */
  headers: Record<string, string | string[] | undefined>;
  /** Status and headers a procedure wants on its response (e.g. 201, Idempotent-Replayed). */
  response: { status?: number; headers: Record<string, string> };
  principal?: Principal;
  /** Set when the HTTP edge already checked and counted this call (REST: one call per request). */
  admission?: Admission;
  /** The signed-in person of a dashboard call (`/admin/trpc`), set by the session middleware. */
  dashboard?: DashboardSession;
}

export type AuthedContext = Context & { principal: Principal };

/** What a service that acts for an organization needs, whichever door the call came through (API key or dashboard). */
export type OrgScope = Pick<Context, 'services' | 'em'> & { principal: Pick<Principal, 'orgId'> };

export function createRequestContext(
  services: Services,
  request: { requestId: string; headers: Context['headers']; door: Door },
): Context {
  return {
    services,
    em: services.orm.em.fork(),
    requestId: request.requestId,
    door: request.door,
    headers: request.headers,
    response: { headers: {} },
  };
}

export function headerValue(ctx: Pick<Context, 'headers'>, name: string): string | undefined {
  const value = ctx.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
