import { randomBytes } from 'node:crypto';
import type { Config } from '@crm/config';
import { type Orm, sqlOf, type UserRole, uuidv7 } from '@crm/db';
import { betterAuth } from 'better-auth';
import { fromNodeHeaders } from 'better-auth/node';
import type { KyselyPlugin } from 'kysely';
import type { Log } from '../limits/log.ts';
import { unscopedDb } from '../org-scope.ts';

/** Where better-auth's endpoints live (sign-in, sign-out, change-password, revoke-sessions, get-session). */
export const DASHBOARD_AUTH_PATH = '/admin/auth';
/** Passwords shorter than this are refused everywhere (sign-up by invitation, change, reset). */
export const MIN_PASSWORD_LENGTH = 12;
export const MAX_PASSWORD_LENGTH = 128;

/** The person behind a dashboard request, from the session cookie. */
export interface DashboardSession {
  userId: string;
  orgId: string;
  email: string;
  name: string;
  role: UserRole;
}

/**
 * The secret that signs session cookies: CRM_AUTH_SECRET, or one the server made the first time it ran
 * and keeps in the database, so `npm start` needs no setting and every instance signs alike.
 */
async function sessionSecret(orm: Orm, configured: string | undefined): Promise<string> {
  if (configured) return configured;
  const em = orm.em.fork();
  await sqlOf(em)
    .insertInto('server_secrets')
    .values({ name: 'auth_secret', value: randomBytes(32).toString('base64url'), created_at: new Date() })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  const row = await unscopedDb(em, 'the server’s own secret (server_secrets has no organization)')
    .selectFrom('server_secrets')
    .select('value')
    .where('name', '=', 'auth_secret')
    .executeTakeFirstOrThrow();
  return row.value;
}

const timestamps = { createdAt: 'created_at', updatedAt: 'updated_at' } as const;

const TIMESTAMP_COLUMNS = new Set([
  'expires_at',
  'created_at',
  'updated_at',
  'access_token_expires_at',
  'refresh_token_expires_at',
]);

/**
 * MikroORM's connection hands timestamps back as strings; better-auth compares them with Dates (an
 * expired session would pass `expiresAt < now` as a string). Its rows get real Dates here.
 */
const timestampsAsDates: KyselyPlugin = {
  transformQuery: (args) => args.node,
  transformResult: async ({ result }) => {
    for (const row of result.rows as Record<string, unknown>[]) {
      for (const column in row) {
        const value = row[column];
        if (typeof value === 'string' && TIMESTAMP_COLUMNS.has(column)) row[column] = new Date(value);
      }
    }
    return result;
  },
};

function options(orm: Orm, config: Config, secret: string, log: Log) {
  const publicUrl = config.admin.publicUrl;
  return {
    appName: 'Headless CRM',
    basePath: DASHBOARD_AUTH_PATH,
    // Unset: better-auth takes the origin of each request, so the dashboard works on whatever address it
    // is opened at; trustedOrigins below then admits only that same origin.
    ...(publicUrl ? { baseURL: publicUrl } : {}),
    secret,
    database: {
      db: unscopedDb(
        orm.em.fork(),
        'sign-in: better-auth finds a person by e-mail and a session by its cookie, before any organization',
      ).withPlugin(timestampsAsDates),
      type: 'postgres' as const,
    },
    user: {
      modelName: 'users',
      fields: { emailVerified: 'email_verified', ...timestamps },
      additionalFields: {
        orgId: { type: 'string' as const, required: true, input: false, fieldName: 'org_id' },
        role: { type: 'string' as const, required: true, input: false, fieldName: 'role' },
      },
    },
    session: {
      modelName: 'sessions',
      fields: {
        userId: 'user_id',
        expiresAt: 'expires_at',
        ipAddress: 'ip_address',
        userAgent: 'user_agent',
        ...timestamps,
      },
      expiresIn: config.admin.sessionHours * 3600,
      // A session in use is extended at most once an hour, so an idle one ends on time.
      updateAge: 3600,
    },
    account: {
      modelName: 'accounts',
      fields: {
        userId: 'user_id',
        accountId: 'account_id',
        providerId: 'provider_id',
        accessToken: 'access_token',
        refreshToken: 'refresh_token',
        idToken: 'id_token',
        accessTokenExpiresAt: 'access_token_expires_at',
        refreshTokenExpiresAt: 'refresh_token_expires_at',
        ...timestamps,
      },
    },
    verification: { modelName: 'verifications', fields: { expiresAt: 'expires_at', ...timestamps } },
    emailAndPassword: {
      enabled: true,
      // People are created by the CLI, by an admin's invitation, or at first start: never by themselves.
      disableSignUp: true,
      minPasswordLength: MIN_PASSWORD_LENGTH,
      maxPasswordLength: MAX_PASSWORD_LENGTH,
      revokeSessionsOnPasswordReset: true,
    },
    // Sign-in attempts are limited by the server itself, per address and per account (see dashboard routes):
    // better-auth can only tell addresses apart by forwarded headers, which any client can set.
    rateLimit: { enabled: false },
    trustedOrigins: (request?: Request) => {
      if (publicUrl) return [publicUrl];
      const url = request ? new URL(request.url) : undefined;
      return url ? [url.origin] : [];
    },
    advanced: {
      // Explicit: better-auth skips its Origin and CSRF checks when it believes it runs under a test runner.
      disableOriginCheck: false,
      disableCSRFCheck: false,
      cookiePrefix: 'crm',
      useSecureCookies: publicUrl?.startsWith('https:') ?? false,
      defaultCookieAttributes: { httpOnly: true, sameSite: 'lax' as const, path: '/' },
      database: { generateId: () => uuidv7(), validateSchema: false },
    },
    telemetry: { enabled: false },
    // Its failures reach our log as one line (a database outage would otherwise print a stack per request);
    // the HTTP edge answers them 503. Answers such as a wrong password are not failures.
    onAPIError: {
      onError: (error: unknown) => {
        const status = (error as { status?: unknown }).status;
        if (typeof status === 'string' && status !== 'INTERNAL_SERVER_ERROR') return;
        log.warn({ reason: (error as Error).message }, 'dashboard sign-in service failed');
      },
    },
    // Its one start-up warning is about leaving baseURL unset, which is deliberate here (see trustedOrigins).
    logger: { disabled: config.env === 'test', level: 'error' as const },
  };
}

export type DashboardAuth = ReturnType<typeof betterAuth<ReturnType<typeof options>>>;

export async function createDashboardAuth(orm: Orm, config: Config, log: Log): Promise<DashboardAuth> {
  const secret = await sessionSecret(orm, config.admin.authSecret);
  return betterAuth(options(orm, config, secret, log));
}

/** The signed-in person of a request, or undefined (no cookie, an expired or revoked session). */
export async function dashboardSessionOf(
  auth: DashboardAuth,
  headers: Record<string, string | string[] | undefined>,
): Promise<DashboardSession | undefined> {
  const h = fromNodeHeaders(headers);
  if (!h.get('cookie')) return undefined;
  const found = await auth.api.getSession({ headers: h });
  if (!found) return undefined;
  const user = found.user as typeof found.user & { orgId: string; role: UserRole };
  return { userId: user.id, orgId: user.orgId, email: user.email, name: user.name, role: user.role };
}
