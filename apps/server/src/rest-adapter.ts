import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError, appRouter, OPERATIONS, type Operation } from '@crm/api';
import type { Middleware } from 'koa';
import { createOpenApiNodeHttpHandler } from 'trpc-to-openapi';
import { contextOf } from './request-context.ts';

/**
 * Finds the documented route for the request, or answers JSON 404/405 (with `Allow`) itself.
 * The route lands in `ctx.state.route` for the middleware after it.
 */
export function matchRoute(prefix: string): Middleware {
  const routes = OPERATIONS;
  return async (ctx, next) => {
    if (!ctx.path.startsWith(`${prefix}/`)) return next();
    const path = ctx.path.slice(prefix.length);
    const candidates = routes.filter((r) => r.pattern.test(path));
    // A literal path (`/deals/batch`) is its own resource, not an id of the templated one (`/deals/{id}`):
    // GET /deals/batch is 405 (POST only), not a 400 about an id.
    const literal = candidates.filter((r) => r.path === path);
    const matching = literal.length > 0 ? literal : candidates;
    if (matching.length === 0) throw new ApiError('not_found', `No such endpoint: ${ctx.method} ${ctx.path}`);
    // HEAD is a GET whose body is not sent (Koa leaves it out).
    const method = ctx.method === 'HEAD' ? 'GET' : ctx.method;
    const route = matching.find((r) => r.method === method);
    if (!route) {
      const methods: string[] = matching.map((r) => r.method);
      if (methods.includes('GET')) methods.push('HEAD');
      const allow = [...new Set(methods)].join(', ');
      throw new ApiError(
        'method_not_allowed',
        `${ctx.method} is not allowed on ${ctx.path}; allowed: ${allow}`,
        {
          headers: { Allow: allow },
        },
      );
    }
    ctx.state.route = route;
    return next();
  };
}

/**
 * What trpc-to-openapi would write to the socket, captured so that Koa writes the response instead:
 * Koa's middleware (logging, headers, error mapping) then sees every response, and errors can be
 * rewritten into the contract's bodies before anything is sent.
 */
class CapturedResponse {
  statusCode = 200;
  readonly headers: Record<string, string> = {};
  body: string | undefined;
  writableEnded = false;
  private readonly real: ServerResponse;
  private readonly done: Promise<void>;
  private finish!: () => void;

  constructor(real: ServerResponse) {
    this.real = real;
    this.done = new Promise((resolve) => {
      this.finish = resolve;
    });
  }
  setHeader(name: string, value: string) {
    this.headers[name.toLowerCase()] = String(value);
    return this;
  }
  end(body?: string) {
    this.body = body;
    this.writableEnded = true;
    this.finish();
    return this;
  }
  // Abort detection listens on the real socket.
  once(event: string, fn: () => void) {
    this.real.once(event, fn);
    return this;
  }
  on(event: string, fn: () => void) {
    this.real.on(event, fn);
    return this;
  }
  off(event: string, fn: () => void) {
    this.real.off(event, fn);
    return this;
  }
  finished(): Promise<void> {
    return this.done;
  }
}

export const MAX_BODY_BYTES = 1024 * 1024;

/** The failure trpc-to-openapi reported for a request: mapped from the error itself, not from its JSON. */
const FAILURE = Symbol('crm.failure');
type WithFailure = IncomingMessage & { [FAILURE]?: unknown };

const decodes = (text: string): boolean => {
  try {
    decodeURIComponent(text);
    return true;
  } catch {
    return false;
  }
};

/**
 * What is wrong with the first query parameter whose name or value is not percent-encoded UTF-8
 * (`q=%E0%A4%A`, `limit=5%`): Node's querystring, which Koa parses with, keeps such bytes as they came.
 */
function malformedQuery(querystring: string): string | undefined {
  for (const pair of querystring.split('&')) {
    const [name = '', value = ''] = pair.split(/=(.*)/s);
    if (!decodes(name)) return `${name}: malformed percent-encoding in a query parameter's name`;
    if (!decodes(value))
      return `${decodeURIComponent(name)}: malformed percent-encoding in ${JSON.stringify(value)}`;
  }
  return undefined;
}

/** Runs the matched route's procedure through trpc-to-openapi, on the body Koa already parsed. */
export function restHandler(prefix: string): Middleware {
  const handler = createOpenApiNodeHttpHandler({
    router: appRouter,
    createContext: ({ req }: { req: IncomingMessage }) => contextOf(req),
    maxBodySize: MAX_BODY_BYTES,
    // Logged, like every failure, by the outermost middleware.
    onError: ({ error, req }) => {
      (req as WithFailure)[FAILURE] = error;
    },
  });

  return async (ctx, next) => {
    // Anything outside the API falls through to the JSON 404 of the outermost middleware.
    if (!ctx.path.startsWith(`${prefix}/`)) return next();
    const route = ctx.state.route as Operation;
    const req = ctx.req as IncomingMessage & { body?: unknown };
    // Path parameters come from the path only: the same name in the body would be silently overridden.
    const body = req.body as Record<string, unknown> | undefined;
    const shadowed = route.pathParams.filter((p) => body && Object.hasOwn(body, p));
    if (shadowed.length > 0)
      throw new ApiError('invalid_request', `Unknown property: ${shadowed.join(', ')}`);

    // First: a name Koa kept undecoded would otherwise be reported as an unknown parameter.
    const malformed = malformedQuery(ctx.querystring);
    if (malformed) throw new ApiError('invalid_request', malformed);

    // A misspelt parameter (`?limt=1`) would otherwise be ignored and the default used without a word.
    const unknown = Object.keys(ctx.query).filter((name) => !route.queryParams.has(name));
    if (unknown.length > 0) {
      const known = [...route.queryParams];
      throw new ApiError(
        'invalid_request',
        `Unknown query parameter${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}` +
          (known.length > 0 ? ` (this operation reads ${known.join(', ')})` : ' (this operation reads none)'),
      );
    }

    // No documented query parameter is a list: a repeated one is a mistake, not a value to guess at.
    const repeated = Object.entries(ctx.query).find(([, value]) => Array.isArray(value));
    if (repeated) throw new ApiError('invalid_request', `${repeated[0]}: give this query parameter once`);

    // trpc-to-openapi matches the path without our prefix, and knows no HEAD.
    req.url = ctx.path.slice(prefix.length) + (ctx.querystring ? `?${ctx.querystring}` : '');
    if (req.method === 'HEAD') req.method = 'GET';
    const captured = new CapturedResponse(ctx.res);
    await handler(req, captured as unknown as ServerResponse);
    await captured.finished();

    const context = contextOf(req);
    for (const [name, value] of Object.entries(context.response.headers)) ctx.set(name, value);
    // The outermost middleware writes the error's contract body, from the one error table.
    if (captured.statusCode >= 400)
      throw (req as WithFailure)[FAILURE] ?? new Error('unreported REST failure');
    ctx.status = route.successStatus;
    // Already JSON: passed through as it is rather than parsed and serialized again.
    ctx.type = 'application/json';
    ctx.body = captured.body;
  };
}
