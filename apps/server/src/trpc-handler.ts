import { logFailure, MAX_BODY_BYTES, toErrorResponse } from '@crm/api';
import type { AnyTRPCRouter } from '@trpc/server';
import { nodeHTTPRequestHandler } from '@trpc/server/adapters/node-http';
import type { Context as KoaContext } from 'koa';
import type { Logger } from './logger.ts';
import { contextOf } from './request-context.ts';

/**
 * Hands a Koa request to a tRPC router mounted at `prefix` (the API's `/trpc`, the dashboard's
 * `/admin/trpc`), on the request context Koa attached. Statuses come from the one error table, as on
 * REST, and the headers a call earned (rate-limit, quota, Retry-After) ride along.
 */
export async function serveTrpc(
  ctx: KoaContext,
  options: { router: AnyTRPCRouter; prefix: string; logger: Logger; headers?: Record<string, string> },
): Promise<void> {
  ctx.respond = false;
  // Koa starts every response as 404; tRPC only sets its own status over a 200.
  ctx.res.statusCode = 200;
  await nodeHTTPRequestHandler({
    router: options.router,
    req: ctx.req,
    res: ctx.res,
    path: ctx.path.slice(options.prefix.length + 1),
    maxBodySize: MAX_BODY_BYTES,
    createContext: ({ req }) => contextOf(req),
    onError: ({ error }) =>
      logFailure(options.logger, ctx.state.requestId, error.cause ?? error, toErrorResponse(error).status),
    responseMeta: ({ ctx: context, errors }) => {
      const headers = { ...context?.response.headers, ...options.headers };
      if (!errors[0]) return { headers };
      const { status, headers: errorHeaders } = toErrorResponse(errors[0]);
      return { status, headers: { ...headers, ...errorHeaders } };
    },
  });
  ctx.status = ctx.res.statusCode;
}
