import { initTRPC } from '@trpc/server';
import { middlewareMarker } from '@trpc/server/unstable-core-do-not-import';
import type { OpenApiMeta } from 'trpc-to-openapi';
import { admitCall } from './admission.ts';
import { runAsCall } from './call-context.ts';
import type { Context } from './context.ts';
import { ApiError, type ErrorBody, type ErrorCode, toErrorResponse, toTRPCError } from './errors.ts';
import { withIdempotency } from './idempotency.ts';
import type { RateLimitGroup } from './limits/groups.ts';
import type { Scope } from './scopes.ts';

export type { AuthedContext } from './context.ts';
export { RATE_LIMIT_GROUPS, type RateLimitGroup } from './limits/groups.ts';

/**
 * Beyond trpc-to-openapi's meta, the facts every door reads from the route table (`routes.ts`): the
 * status a successful call answers with (201 for creates, 202 for work queued), the rate-limit group the
 * call counts against, whether it honours `Idempotency-Key`, the domain errors it can answer beyond those
 * its inputs imply, and a sentence for AI agents on when to call it.
 */
export type Meta = OpenApiMeta<{
  successStatus?: 200 | 201 | 202;
  rateLimit?: RateLimitGroup;
  idempotencyKey?: boolean;
  errors?: ErrorCode[];
  agentHint?: string;
  /** The scope an API key needs to call it. */
  scope?: Scope;
  /** A create's or update's input keys read from the query string, beside its body (`?upsert_on=`). */
  query?: string[];
  /**
   * A POST that only reads (`POST /deals/query`, a list whose filter is too long for a URL): no change
   * anywhere, the same answer when repeated (MCP's readOnlyHint and idempotentHint).
   */
  readOnly?: boolean;
}>;

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
    // No transformer: REST and tRPC must return the same JSON.
    errorFormatter({ shape, error }) {
      const { status, body, headers } = toErrorResponse(error);
      const data: ApiErrorData = { httpStatus: status, body, headers };
      // The stack and tRPC's own data never leave the server.
      return { code: shape.code, message: body.error, data };
    },
  });

export const router = t.router;

/** Converts ApiErrors to TRPCErrors once, so procedures and services just throw ApiError. */
const errorBoundary = t.middleware(async ({ next }) => {
  const result = await next();
  // tRPC wraps a thrown ApiError as INTERNAL_SERVER_ERROR; give it its own tRPC code (and status).
  if (!result.ok && result.error.code === 'INTERNAL_SERVER_ERROR' && result.error.cause instanceof ApiError)
    throw toTRPCError(result.error.cause);
  return result;
});

export const publicProcedure = t.procedure.use(errorBoundary);

/**
 * Admits the call (API key, rate limit, quotas) unless its door already did (REST and MCP admit before
 * they read the input). Each call of a tRPC batch is admitted on its own.
 */
const admittedProcedure = publicProcedure.use(async ({ ctx, meta, next }) => {
  const authed =
    ctx.principal && ctx.admission ? { ...ctx, principal: ctx.principal } : await admitCall(ctx, meta);
  // Who makes the changes of this call, for the events it emits.
  const via = ctx.door === 'dashboard' ? 'trpc' : ctx.door;
  const actor = { type: 'api_key' as const, api_key_id: authed.principal.apiKeyId, via };
  return runAsCall({ actor, requestId: ctx.requestId }, () => next({ ctx: authed }));
});

/**
 * An operation whose meta says `idempotencyKey` runs once per `Idempotency-Key`: its answer is stored in
 * the transaction of its change, and a retry with the same key and input gets it back. The procedure's
 * own code knows nothing of it: it writes through `ctx.em`, which is that transaction here.
 */
export const authedProcedure = admittedProcedure.use(async ({ ctx, meta, path, getRawInput, next }) => {
  if (!meta?.idempotencyKey) return next();
  let ran: Awaited<ReturnType<typeof next>> | undefined;
  const data = await withIdempotency(ctx, path, await getRawInput(), async (em) => {
    ran = await next({ ctx: { em } });
    if (!ran.ok) throw ran.error;
    return ran.data;
  });
  // A replay: the stored answer, as the procedure's own result.
  return ran ?? { ok: true as const, data, marker: middlewareMarker };
});

/** Calls procedures in-process with a context of one's own (the MCP door). */
export const createCallerFactory = t.createCallerFactory;
