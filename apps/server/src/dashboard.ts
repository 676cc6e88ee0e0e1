import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import {
  ApiError,
  adminRouter,
  createRequestContext,
  DASHBOARD_AUTH_PATH,
  dashboardSessionOf,
  type Services,
} from '@crm/api';
import { fromNodeHeaders } from 'better-auth/node';
import type { Context as KoaContext, Middleware } from 'koa';
import helmet from 'koa-helmet';
import send from 'koa-send';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import getRawBody from 'raw-body';
import type { Logger } from './logger.ts';
import { attachContext } from './request-context.ts';
import { serveTrpc } from './trpc-handler.ts';

export const DASHBOARD_PREFIX = '/admin';
const ADMIN_TRPC_PREFIX = `${DASHBOARD_PREFIX}/trpc`;
const AUTH_BODY_LIMIT = '64kb';

const require = createRequire(import.meta.url);
/** The dashboard's built files (`vite build`, run by `npm install` and `npm start` through turbo). */
export const DASHBOARD_DIST = path.join(path.dirname(require.resolve('@crm/dashboard/package.json')), 'dist');

/**
 * Sign-in attempts are counted per client address and per account over this window, so neither guessing
 * one person's password from many addresses nor many people's from one address gets far. A successful
 * sign-in clears its account's count. Counted in memory per instance (N instances allow N times as many).
 */
const SIGN_IN_WINDOW_SECONDS = 15 * 60;

/** Whose password a call checks: the e-mail in its body, the signed-in person's, or none. */
type Credential = 'email' | 'session' | 'none';

/** The better-auth endpoints the dashboard calls; the rest of better-auth's (sign-up, resets, …) are 404. */
const AUTH_ENDPOINTS: Record<string, { method: 'GET' | 'POST'; credential: Credential }> = {
  'sign-in/email': { method: 'POST', credential: 'email' },
  'change-password': { method: 'POST', credential: 'session' },
  'sign-out': { method: 'POST', credential: 'none' },
  'revoke-sessions': { method: 'POST', credential: 'none' },
  'get-session': { method: 'GET', credential: 'none' },
};

/** Pages and their scripts: no inline code, nothing from another origin, never in a frame. */
const securityHeaders = helmet({
  contentSecurityPolicy: {
    useDefaults: false,
    directives: {
      defaultSrc: ["'self'"],
      scriptSrc: ["'self'"],
      styleSrc: ["'self'"],
      imgSrc: ["'self'", 'data:'],
      connectSrc: ["'self'"],
      fontSrc: ["'self'"],
      objectSrc: ["'none'"],
      baseUri: ["'none'"],
      formAction: ["'self'"],
      frameAncestors: ["'none'"],
    },
  },
  crossOriginEmbedderPolicy: false,
  // HSTS only makes sense behind HTTPS, which the proxy in front decides.
  strictTransportSecurity: false,
});

/**
 * better-auth also puts the session token in sign-in answers' JSON (for bearer clients); the dashboard uses
 * only the HttpOnly cookie, so the token is taken out where page scripts could read it.
 */
function withoutSessionToken(body: Buffer): Buffer {
  if (!body.includes('"token"')) return body;
  try {
    const parsed = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
    if (parsed && typeof parsed === 'object') {
      // Sign-in answers carry it at the top, get-session in `session`, list-sessions in each item.
      const holders = [parsed, parsed.session, ...(Array.isArray(parsed) ? parsed : [])];
      for (const holder of holders)
        if (holder && typeof holder === 'object') delete (holder as Record<string, unknown>).token;
      return Buffer.from(JSON.stringify(parsed));
    }
  } catch {
    // Not JSON: passed on as it is.
  }
  return body;
}

function refuse(
  ctx: KoaContext,
  status: number,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
) {
  ctx.status = status;
  ctx.set(headers);
  ctx.body = body;
}

/** A wait as a person reads it on the sign-in page: "40 seconds", "about 15 minutes". */
function waitInWords(seconds: number): string {
  if (seconds < 90) return `${seconds} second${seconds === 1 ? '' : 's'}`;
  return `about ${Math.ceil(seconds / 60)} minutes`;
}

export function dashboardRoutes(services: Services, logger: Logger): Middleware {
  const auth = services.dashboardAuth;
  const attempts = services.config.admin.signInAttempts;
  const byAddress = new RateLimiterMemory({ points: attempts.perAddress, duration: SIGN_IN_WINDOW_SECONDS });
  const byAccount = new RateLimiterMemory({ points: attempts.perAccount, duration: SIGN_IN_WINDOW_SECONDS });
  const built = existsSync(path.join(DASHBOARD_DIST, 'index.html'));

  /**
   * better-auth's endpoints, behind the sign-in limits. Only the ones the dashboard uses are served, each
   * taking JSON only: better-auth also reads form bodies on some (sign-in among them), and an attempt the
   * limits could not read the account of would be an attempt they do not count.
   */
  async function authEndpoint(ctx: KoaContext): Promise<void> {
    const endpoint = AUTH_ENDPOINTS[ctx.path.slice(DASHBOARD_AUTH_PATH.length + 1)];
    if (!endpoint) throw new ApiError('not_found', `No such endpoint: ${ctx.method} ${ctx.path}`);
    if (ctx.method !== endpoint.method)
      throw new ApiError('method_not_allowed', `Use ${endpoint.method}`, {
        headers: { Allow: endpoint.method },
      });
    const body =
      endpoint.method === 'POST' ? await getRawBody(ctx.req, { limit: AUTH_BODY_LIMIT }) : undefined;
    if (body && body.length > 0 && !ctx.is('application/json'))
      throw new ApiError('unsupported_media_type', 'Content-Type must be application/json');
    const account = await accountOf(ctx, endpoint.credential, body);
    if (account !== undefined) {
      try {
        await byAddress.consume(ctx.request.ip || 'unknown');
        await byAccount.consume(account);
      } catch (err) {
        if (!(err instanceof RateLimiterRes)) throw err;
        const seconds = Math.max(1, Math.ceil(err.msBeforeNext / 1000));
        const message = `Too many sign-in attempts: try again in ${waitInWords(seconds)}`;
        refuse(
          ctx,
          429,
          { error: message, message, code: 'rate_limited', retry_after_seconds: seconds },
          { 'Retry-After': String(seconds) },
        );
        return;
      }
    }
    const response = await forward(ctx, body);
    // The password was right: earlier wrong guesses no longer count against the account.
    if (response.ok && account) await byAccount.delete(account);
  }

  /**
   * The account a password attempt is counted against: the e-mail it signs in as, or the signed-in person
   * whose password it checks. Undefined for calls that check no password, and when nobody is signed in
   * (better-auth answers those 401 without checking one).
   */
  async function accountOf(
    ctx: KoaContext,
    credential: Credential,
    body: Buffer | undefined,
  ): Promise<string | undefined> {
    if (credential === 'none') return undefined;
    if (credential === 'session')
      return (await dashboardSessionOf(auth, ctx.req.headers))?.email.toLowerCase();
    let parsed: unknown;
    try {
      parsed = JSON.parse(body?.toString('utf8') ?? '');
    } catch {
      throw new ApiError('invalid_json', 'Request body must be JSON: {"email": …, "password": …}');
    }
    const email = (parsed as { email?: unknown } | null)?.email;
    if (typeof email !== 'string' || email.trim() === '')
      throw new ApiError('invalid_request', 'email: Required');
    return email.trim().toLowerCase();
  }

  async function forward(ctx: KoaContext, body: Buffer | undefined): Promise<Response> {
    const headers = fromNodeHeaders(ctx.req.headers);
    const request = new Request(`${ctx.protocol}://${ctx.host}${ctx.url}`, {
      method: ctx.method,
      headers,
      ...(body && body.length > 0 ? { body: new Uint8Array(body) } : {}),
    });
    const response = await auth.handler(request);
    // better-auth answers its own failures (the database down, mostly) with a bare 500: ours is a 503 to retry.
    if (response.status >= 500)
      throw new ApiError('service_unavailable', 'Sign-in is unavailable for a moment; try again shortly', {
        headers: { 'Retry-After': '5' },
      });
    ctx.status = response.status;
    for (const [name, value] of response.headers) if (name !== 'set-cookie') ctx.set(name, value);
    const cookies = response.headers.getSetCookie();
    if (cookies.length > 0) ctx.set('Set-Cookie', cookies);
    ctx.body = withoutSessionToken(Buffer.from(await response.arrayBuffer()));
    return response;
  }

  async function trpcEndpoint(ctx: KoaContext): Promise<void> {
    const context = createRequestContext(services, {
      requestId: ctx.state.requestId,
      headers: ctx.req.headers,
      door: 'dashboard',
    });
    attachContext(ctx.req, context);
    await serveTrpc(ctx, {
      router: adminRouter,
      prefix: ADMIN_TRPC_PREFIX,
      logger,
      headers: { 'Cache-Control': 'no-store' },
    });
  }

  /** The single-page app: hashed assets cached for a year, every other path its index.html, never cached. */
  async function page(ctx: KoaContext): Promise<void> {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') throw new ApiError('method_not_allowed', 'Use GET');
    if (!built) {
      ctx.status = 503;
      ctx.type = 'text/plain';
      ctx.body = 'The dashboard is not built: run `npm run build` (npm install and npm start do it).';
      return;
    }
    const rest = ctx.path.slice(DASHBOARD_PREFIX.length);
    if (rest.startsWith('/assets/')) {
      const served = await send(ctx, rest, {
        root: DASHBOARD_DIST,
        immutable: true,
        maxage: 365 * 86_400_000,
      }).catch(() => undefined);
      if (!served) throw new ApiError('not_found', `No such file: ${ctx.path}`);
      return;
    }
    if (rest === '/favicon.svg') {
      await send(ctx, rest, { root: DASHBOARD_DIST, maxage: 86_400_000 });
      return;
    }
    ctx.set('Cache-Control', 'no-cache');
    await send(ctx, 'index.html', { root: DASHBOARD_DIST });
  }

  return async (ctx, next) => {
    if (ctx.path === '/' && (ctx.method === 'GET' || ctx.method === 'HEAD')) {
      ctx.redirect(`${DASHBOARD_PREFIX}/`);
      return;
    }
    if (ctx.path === '/favicon.ico') {
      ctx.redirect(`${DASHBOARD_PREFIX}/favicon.svg`);
      return;
    }
    if (ctx.path !== DASHBOARD_PREFIX && !ctx.path.startsWith(`${DASHBOARD_PREFIX}/`)) return next();
    await securityHeaders(ctx, async () => {
      ctx.set('Referrer-Policy', 'no-referrer');
      if (ctx.path.startsWith(`${DASHBOARD_AUTH_PATH}/`)) return authEndpoint(ctx);
      if (ctx.path.startsWith(`${ADMIN_TRPC_PREFIX}/`)) return trpcEndpoint(ctx);
      return page(ctx);
    });
  };
}
