import { jsonText, matchOperation, type RestMatch, restInput, serveCall } from '@crm/api';
import type { Middleware } from 'koa';
import { contextOf } from './request-context.ts';

/**
 * Finds the documented operation for the request, or answers JSON 404/405 (with `Allow`); the match lands
 * in `ctx.state.route` for the middleware after it.
 */
export function matchRoute(prefix: string): Middleware {
  return async (ctx, next) => {
    if (!ctx.path.startsWith(`${prefix}/`)) return next();
    ctx.state.route = matchOperation(ctx.method, ctx.path.slice(prefix.length));
    return next();
  };
}

/** The matched operation's call, on the body Koa already parsed: Koa reads the request and writes the answer. */
export function restHandler(prefix: string): Middleware {
  return async (ctx, next) => {
    // Anything outside the API falls through to the JSON 404 of the outermost middleware.
    if (!ctx.path.startsWith(`${prefix}/`)) return next();
    const match = ctx.state.route as RestMatch;
    const { querystring, query } = ctx;
    const body = (ctx.req as { body?: unknown }).body;
    const input = restInput(match, { querystring, query, body });
    const outcome = await serveCall(contextOf(ctx.req), match.operation, input);
    ctx.set(outcome.headers);
    ctx.status = outcome.status;
    if (!outcome.ok || outcome.result == null) ctx.body = outcome.ok ? outcome.result : outcome.error;
    else {
      // Serialized here rather than by Koa: a list's stored custom values go out as stored (StoredJson).
      ctx.type = 'json';
      ctx.body = jsonText(outcome.result);
    }
  };
}
