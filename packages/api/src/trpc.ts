import { ORG_FILTER } from '@crm/db';
import { initTRPC } from '@trpc/server';
import type { OpenApiMeta } from 'trpc-to-openapi';
import { findActiveKey } from './admin/api-keys.ts';
import { type Context, headerValue } from './context.ts';

export type { AuthedContext } from './context.ts';

import { ApiError, type ErrorBody, toApiError, toTRPCError } from './errors.ts';

/** Beyond trpc-to-openapi's meta: the status a successful call answers with (201 for creates). */
export type Meta = OpenApiMeta<{ successStatus?: 200 | 201 }>;

/** What a tRPC client finds in `error.data`, and what the REST edge turns into the contract body. */
export interface ApiErrorData {
  httpStatus: number;
  body: ErrorBody;
  headers: Record<string, string>;
}

const t = initTRPC
  .context<Context>()
  .meta<Meta>()
  .create({
    // No transformer: trpc-to-openapi ignores them, and REST and tRPC must return the same JSON.
    errorFormatter({ shape, error }) {
      const apiError = toApiError(error);
      const data: ApiErrorData = {
        httpStatus: apiError.status,
        body: { error: apiError.message, code: apiError.code, ...apiError.extra },
        headers: apiError.headers,
      };
      // The stack and tRPC's own data never leave the server.
      return { code: shape.code, message: apiError.message, data };
    },
  });

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;

/** Converts ApiErrors to TRPCErrors once, so procedures and services just throw ApiError. */
const errorBoundary = t.middleware(async ({ next }) => {
  const result = await next();
  // tRPC wraps a thrown ApiError as INTERNAL_SERVER_ERROR; give it its own tRPC code (and status).
  if (!result.ok && result.error.code === 'INTERNAL_SERVER_ERROR' && result.error.cause instanceof ApiError)
    throw toTRPCError(result.error.cause);
  return result;
});

export const publicProcedure = t.procedure.use(errorBoundary);

/** last_used_at is written at most once a minute per key and process: a hot row otherwise. */
const KEY_USE_RESOLUTION_MS = 60_000;
const keyLastNoted = new Map<string, number>();

function noteKeyUse(ctx: Context, keyId: string): void {
  const now = Date.now();
  if (now - (keyLastNoted.get(keyId) ?? 0) < KEY_USE_RESOLUTION_MS) return;
  keyLastNoted.set(keyId, now);
  // Outside the request's transaction and not awaited: bookkeeping must not fail or slow a call.
  ctx.services.orm.em
    .fork()
    .execute('update api_keys set last_used_at = now() where id = ?', [keyId])
    .catch(() => keyLastNoted.delete(keyId));
}

function bearerToken(ctx: Context): string | undefined {
  const header = headerValue(ctx, 'authorization');
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1] ?? '';
}

/** Resolves the API key to its organization and scopes every ORM read of this request to it. */
export const authedProcedure = publicProcedure.use(async ({ ctx, next }) => {
  const token = bearerToken(ctx);
  if (token === undefined)
    throw toTRPCError(
      new ApiError('missing_api_key', 'Missing Authorization header: send "Authorization: Bearer <API_KEY>"'),
    );
  const key = token ? await findActiveKey(ctx.em, token) : undefined;
  if (!key) throw toTRPCError(new ApiError('invalid_api_key', 'Invalid or revoked API key'));
  noteKeyUse(ctx, key.id);
  ctx.em.setFilterParams(ORG_FILTER, { orgId: key.orgId });
  const principal = { orgId: key.orgId, apiKeyId: key.id };
  ctx.principal = principal;
  return next({ ctx: { ...ctx, principal } });
});
