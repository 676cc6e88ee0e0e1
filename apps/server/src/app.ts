import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import {
  API_BASE_PATH,
  ApiError,
  admitCall,
  appRouter,
  buildOpenApiDocument,
  createRequestContext,
  LIMIT_HEADER_NAMES,
  logFailure,
  MAX_BODY_BYTES,
  type RestMatch,
  type Services,
  toErrorResponse,
} from '@crm/api';
import { asRequest, DATABASE_PROBE_TIMEOUT_MS } from '@crm/db';
import { bodyParser } from '@koa/bodyparser';
import cors from '@koa/cors';
import Koa from 'koa';
import { dashboardRoutes } from './dashboard.ts';
import type { Logger } from './logger.ts';
import { mcpRoute } from './mcp-route.ts';
import { attachContext } from './request-context.ts';
import { matchRoute, restHandler } from './rest-adapter.ts';
import { serveTrpc } from './trpc-handler.ts';

export const API_PREFIX = API_BASE_PATH;
export const TRPC_PREFIX = '/trpc';

const REQUEST_ID = /^[\w.-]{1,128}$/;
/** How long /readyz waits for the database before answering 503: as long as a probe for a hang does. */
const READINESS_TIMEOUT_MS = DATABASE_PROBE_TIMEOUT_MS;

const require = createRequire(import.meta.url);
/** The API reference page's script ships in the installed package: no CDN at run time. */
const SCALAR_BUNDLE = path.join(
  path.dirname(require.resolve('@scalar/api-reference')),
  'browser',
  'standalone.js',
);

const DOCS_HTML = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>Headless CRM API reference</title>
    <meta name="viewport" content="width=device-width, initial-scale=1" />
  </head>
  <body>
    <script id="api-reference" data-url="${API_PREFIX}/openapi.json" data-configuration='{"withDefaultFonts":false,"hideClientButton":true,"showDeveloperTools":"never","agent":{"disabled":true},"mcp":{"disabled":true}}'></script>
    <script src="/docs/standalone.js"></script>
  </body>
</html>`;

export interface AppState {
  /** Set while the server drains for shutdown: readiness then answers 503. */
  draining: boolean;
}

export function buildApp(services: Services, logger: Logger, state: AppState = { draining: false }): Koa {
  const app = new Koa();
  app.proxy = false;
  const openApiDocument = JSON.stringify(buildOpenApiDocument());

  // One log line per request, and the contract's error body for anything that escapes a handler.
  app.use(async (ctx, next) => {
    const started = process.hrtime.bigint();
    const { method, path } = ctx; // before the REST adapter rewrites req.url
    const incoming = ctx.get('x-request-id');
    const requestId = REQUEST_ID.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = requestId;
    ctx.set('X-Request-Id', requestId);
    try {
      // Statements made for a request are abandoned as soon as the database is found hung (packages/db).
      await asRequest(next);
      if (ctx.body === undefined && ctx.status === 404)
        throw new ApiError('not_found', `No such endpoint: ${ctx.method} ${ctx.path}`);
    } catch (err) {
      const { status, body, headers } = toErrorResponse(err);
      logFailure(logger, requestId, err, status);
      // Headers the call already earned (rate-limit and quota headers) go on its error too.
      const apiContext = ctx.state.apiContext as ReturnType<typeof createRequestContext> | undefined;
      if (apiContext) ctx.set(apiContext.response.headers);
      ctx.set(headers);
      ctx.status = status;
      ctx.body = body;
    } finally {
      // While draining, each answer closes its connection, so shutdown need not wait for keep-alive to lapse.
      if (state.draining && !ctx.headerSent) ctx.set('Connection', 'close');
      const context = ctx.state.apiContext as ReturnType<typeof createRequestContext> | undefined;
      logger.info(
        {
          req_id: requestId,
          method,
          path,
          status: ctx.status,
          duration_ms: Number(process.hrtime.bigint() - started) / 1e6,
          org_id: context?.principal?.orgId,
        },
        'request',
      );
    }
  });

  app.use(async (ctx, next) => {
    switch (ctx.path) {
      case '/healthz':
        ctx.body = { status: 'ok' };
        return;
      case '/readyz': {
        // A hung database must not hang readiness: no answer within the bound is "not ready".
        const ok =
          !state.draining &&
          (await Promise.race([
            services.orm.checkConnection().then((c) => c.ok),
            new Promise<false>((resolve) => setTimeout(() => resolve(false), READINESS_TIMEOUT_MS).unref()),
          ]));
        ctx.status = ok ? 200 : 503;
        ctx.body = { status: ok ? 'ready' : 'unavailable' };
        return;
      }
      case `${API_PREFIX}/openapi.json`:
        ctx.type = 'application/json';
        ctx.body = openApiDocument;
        return;
      case '/docs':
      case '/docs/':
        ctx.type = 'text/html';
        ctx.body = DOCS_HTML;
        return;
      case '/docs/standalone.js':
        ctx.type = 'application/javascript';
        ctx.set('Cache-Control', 'public, max-age=3600');
        ctx.body = await readFile(SCALAR_BUNDLE);
        return;
      default:
        return next();
    }
  });

  // The dashboard (/admin: pages, better-auth's endpoints, the admin tRPC router) and the root's redirect.
  app.use(dashboardRoutes(services, logger));

  // CORS for browser apps, on the API paths only and only for the configured origins (off by default).
  const origins = services.config.corsOrigins;
  if (origins.length > 0) {
    const apiCors = cors({
      origin: (ctx) => {
        const origin = ctx.get('origin');
        return origins.includes('*') ? '*' : origins.includes(origin) ? origin : '';
      },
      allowMethods: 'GET,HEAD,POST,PUT,PATCH,DELETE',
      allowHeaders: 'Authorization,Content-Type,Idempotency-Key,X-Request-Id',
      exposeHeaders: ['X-Request-Id', 'Idempotent-Replayed', ...LIMIT_HEADER_NAMES].join(','),
      maxAge: 600,
    });
    app.use((ctx, next) =>
      ctx.path.startsWith(`${API_PREFIX}/`) || ctx.path.startsWith(`${TRPC_PREFIX}/`)
        ? apiCors(ctx, next)
        : next(),
    );
  }

  // Every API request gets its context (one unit of work) and is authenticated and admitted by its rate
  // limit and quotas before its body is read, so the order of answers is: 404/405 for the route, 401,
  // 429, then 413/415/400 for the body.
  app.use(matchRoute(API_PREFIX));
  app.use(async (ctx, next) => {
    const isRest = ctx.path.startsWith(`${API_PREFIX}/`);
    if (!isRest && !ctx.path.startsWith(`${TRPC_PREFIX}/`)) return next();
    const context = createRequestContext(services, {
      requestId: ctx.state.requestId,
      headers: ctx.req.headers,
      door: isRest ? 'rest' : 'trpc',
    });
    ctx.state.apiContext = context;
    attachContext(ctx.req, context);
    if (isRest) Object.assign(context, await admitCall(context, (ctx.state.route as RestMatch).operation));
    return next();
  });

  app.use(async (ctx, next) => {
    if (!ctx.path.startsWith(`${TRPC_PREFIX}/`)) return next();
    await serveTrpc(ctx, { router: appRouter, prefix: TRPC_PREFIX, logger });
  });

  const hasBody = (method: string) => method === 'POST' || method === 'PATCH' || method === 'PUT';
  app.use(async (ctx, next) => {
    if (!ctx.path.startsWith(`${API_PREFIX}/`)) return next();
    if (hasBody(ctx.method) && ctx.request.length && !ctx.is('application/json'))
      throw new ApiError('unsupported_media_type', 'Content-Type must be application/json');
    return next();
  });
  app.use(
    bodyParser({
      enableTypes: ['json'],
      jsonLimit: MAX_BODY_BYTES,
      jsonStrict: true,
      patchNode: true,
      encoding: 'utf-8',
      parsedMethods: ['POST', 'PATCH', 'PUT'],
    }),
  );
  // MCP for AI agents: the same operations as tools, on a body the parser above read (1 MB at most).
  app.use(mcpRoute(services));
  app.use(restHandler(API_PREFIX));
  return app;
}
