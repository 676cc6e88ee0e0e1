import { findActiveKey } from './admin/api-keys.ts';
import { type Context, headerValue, type Principal } from './context.ts';
import { ApiError } from './errors.ts';
import { orgDb, orgFork, scopeToOrg } from './org-scope.ts';

/**
 * last_used_at is coarse: written at most once a minute per key, never once per request. Each process
 * tries at most once a minute per key, and the write itself only moves a value older than a minute, so
 * several instances together still write it at most once a minute.
 */
export const KEY_USE_RESOLUTION_MS = 60_000;
const keyLastNoted = new Map<string, number>();

function noteKeyUse(ctx: Context, key: { id: string; orgId: string }): void {
  const now = Date.now();
  if (now - (keyLastNoted.get(key.id) ?? Number.NEGATIVE_INFINITY) < KEY_USE_RESOLUTION_MS) return;
  keyLastNoted.set(key.id, now);
  // Outside the request's transaction and not awaited: bookkeeping must not fail or slow a call.
  orgDb(orgFork(ctx.services.orm.em, key.orgId))
    .updateTable('api_keys')
    .set({ last_used_at: new Date(now) })
    .where('id', '=', key.id)
    .where((eb) =>
      eb.or([
        eb('last_used_at', 'is', null),
        eb('last_used_at', '<=', new Date(now - KEY_USE_RESOLUTION_MS)),
      ]),
    )
    .execute()
    .catch(() => keyLastNoted.delete(key.id));
}

function bearerToken(ctx: Context): string | undefined {
  const header = headerValue(ctx, 'authorization');
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1] ?? '';
}

/**
 * Resolves the request's API key to its organization, sets `ctx.principal`, and scopes every ORM read
 * of the request's unit of work to that organization. Throws 401 ApiErrors.
 */
export async function authenticate(ctx: Context): Promise<Principal> {
  const token = bearerToken(ctx);
  if (token === undefined)
    throw new ApiError(
      'missing_api_key',
      'Missing Authorization header: send "Authorization: Bearer <API_KEY>"',
    );
  const key = token ? await findActiveKey(ctx.em, token) : undefined;
  if (!key) throw new ApiError('invalid_api_key', 'Invalid or revoked API key');
  if (key.expiresAt && key.expiresAt.getTime() <= Date.now())
    throw new ApiError(
      'expired_api_key',
      `This API key expired at ${key.expiresAt.toISOString()}; use its successor or ask for a new key`,
    );
  noteKeyUse(ctx, key);
  return actFor(ctx, { orgId: key.orgId, apiKeyId: key.id, scopes: key.scopes });
}

/**
 * Makes `ctx` act for an authenticated principal: sets it and scopes every ORM read of the unit of work
 * to its organization. For a door that authenticated the key once for several calls (an MCP request).
 */
export function actFor(ctx: Context, principal: Principal): Principal {
  scopeToOrg(ctx.em, principal.orgId);
  ctx.principal = principal;
  return principal;
}
