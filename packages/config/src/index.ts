import { fileURLToPath } from 'node:url';
import { z } from 'zod';

/** The checkout's own `data/` folder: the embedded database lives here unless CRM_DATA_DIR says otherwise. */
const DEFAULT_DATA_DIR = fileURLToPath(new URL('../../../data', import.meta.url));

const booleanFlag = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');

const perWindow = (fallback: number) => z.coerce.number().int().min(1).max(1_000_000_000).default(fallback);
const monthly = (fallback: number) => z.coerce.number().int().min(0).max(1e15).default(fallback);
const DURATION_UNITS_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 } as const;

/** `5s,30s,2m,1h` (units ms, s, m, h) to milliseconds. */
const durationList = z
  .string()
  .regex(
    /^\s*\d+(\.\d+)?(ms|s|m|h)(\s*,\s*\d+(\.\d+)?(ms|s|m|h))*\s*$/,
    'a comma-separated list like 5s,2m,1h',
  )
  .transform((list) =>
    list.split(',').map((item) => {
      const [, amount, unit] = /^\s*(\d+(?:\.\d+)?)(ms|s|m|h)\s*$/.exec(item) as RegExpExecArray;
      return Math.round(Number(amount) * DURATION_UNITS_MS[unit as keyof typeof DURATION_UNITS_MS]);
    }),
  );

/** An AES-256 key: 32 random bytes, base64 (`openssl rand -base64 32`). */
const aesKey = z
  .string()
  .transform((v) => Buffer.from(v, 'base64'))
  .refine((key) => key.length === 32, 'must be 32 bytes, base64-encoded (openssl rand -base64 32)');

/** What one process runs: the API and the webhook worker (`all`), or one of them. */
/** Where the REST API lives: the one place the prefix is written (the server, its clients and the benchmarks read it). */
export const API_BASE_PATH = '/api/v1/crm';

export const PROCESS_ROLES = ['all', 'api', 'worker'] as const;
export type ProcessRole = (typeof PROCESS_ROLES)[number];

/** Delays between a webhook delivery's attempts: about a day in all (docs/api/webhooks.md, Delivery and retries). */
export const DEFAULT_WEBHOOK_RETRY_SCHEDULE = '5s,30s,2m,10m,30m,1h,2h,4h,8h,8h';

/**
 * Every environment variable the service reads, with its default: docs/configuration.md lists exactly these
 * (packages/config/test/configuration-doc.test.ts checks the names and the defaults).
 */
export const EnvSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  HOST: z.string().min(1).default('0.0.0.0'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/ }).optional(),
  CRM_DATA_DIR: z.string().min(1).default(DEFAULT_DATA_DIR),
  DATABASE_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
  DATABASE_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(2_000),
  DATABASE_QUERY_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(10_000),
  DATABASE_PREPARED_STATEMENTS: booleanFlag.default(true),
  DATABASE_PARALLEL_WORKERS: z.coerce.number().int().min(0).max(64).default(0),
  CRM_STALE_THRESHOLD_DAYS: z.coerce.number().int().min(1).max(365).default(14),
  CRM_SEARCH_PLAIN_UP_TO: z.coerce.number().int().min(0).default(50_000),
  CRM_SEARCH_NEWEST_WINDOW: z.coerce.number().int().min(20).max(1_000_000).default(2_000),
  CRM_BOOTSTRAP_ORG: booleanFlag.default(true),
  CRM_SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(0).default(10_000),
  REDIS_URL: z.url({ protocol: /^rediss?$/ }).optional(),
  CRM_REDIS_PREFIX: z.string().min(1).max(100).default('crm:'),
  CRM_RATE_LIMIT_WINDOW_SECONDS: z.coerce.number().int().min(1).max(3600).default(60),
  CRM_RATE_LIMIT_CRUD: perWindow(200),
  CRM_RATE_LIMIT_AI: perWindow(30),
  CRM_RATE_LIMIT_SEARCH: perWindow(60),
  CRM_RATE_LIMIT_WEBHOOKS: perWindow(30),
  CRM_RATE_LIMIT_EVENTS: perWindow(120),
  CRM_RATE_LIMIT_DEFAULT: perWindow(300),
  CRM_INSTANCE_COUNT: z.coerce.number().int().min(1).max(1000).default(1),
  CRM_API_QUOTA_MONTHLY: monthly(1_000_000),
  CRM_AI_QUOTA_MONTHLY: monthly(10_000),
  CRM_USAGE_FLUSH_INTERVAL_MS: z.coerce.number().int().min(10).max(60_000).default(1000),
  CRM_QUOTA_REFRESH_MS: z.coerce.number().int().min(10).max(3_600_000).default(5_000),
  CRM_ROLE: z.enum(PROCESS_ROLES).default('all'),
  CRM_WEBHOOKS_ALLOW_PRIVATE: booleanFlag.default(false),
  CRM_WEBHOOKS_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(10_000),
  CRM_WEBHOOKS_RETRY_SCHEDULE: durationList.prefault(DEFAULT_WEBHOOK_RETRY_SCHEDULE),
  CRM_WEBHOOKS_MAX_CONSECUTIVE_FAILURES: z.coerce.number().int().min(1).default(50),
  CRM_WEBHOOKS_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(30),
  CRM_EVENTS_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(90),
  CRM_WEBHOOKS_CONCURRENCY: z.coerce.number().int().min(1).max(200).default(10),
  CRM_WEBHOOKS_POLL_INTERVAL_MS: z.coerce.number().int().min(10).max(60_000).default(500),
  CRM_WEBHOOKS_ENCRYPTION_KEY: aesKey.optional(),
  CRM_AI_MODEL: z.string().min(1).optional(),
  CRM_AI_BASE_URL: z.url({ protocol: /^https?$/ }).optional(),
  CRM_AI_API_KEY: z.string().min(1).optional(),
  CRM_AI_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(8_000),
  CRM_PUBLIC_URL: z.url({ protocol: /^https?$/ }).optional(),
  CRM_CORS_ORIGINS: z
    .string()
    .transform((v) =>
      v
        .split(',')
        .map((o) => o.trim().replace(/\/+$/, ''))
        .filter(Boolean),
    )
    .pipe(z.array(z.union([z.literal('*'), z.url({ protocol: /^https?$/ })])))
    .optional(),
  CRM_AUTH_SECRET: z.string().min(32, 'must be at least 32 characters (openssl rand -base64 32)').optional(),
  CRM_SESSION_HOURS: z.coerce
    .number()
    .int()
    .min(1)
    .max(24 * 90)
    .default(12),
  CRM_SIGN_IN_ATTEMPTS_PER_ADDRESS: z.coerce.number().int().min(1).max(1_000_000).default(30),
  CRM_SIGN_IN_ATTEMPTS_PER_ACCOUNT: z.coerce.number().int().min(1).max(1_000_000).default(10),
});

export type Config = Readonly<{
  env: 'development' | 'production' | 'test';
  host: string;
  port: number;
  logLevel: z.infer<typeof EnvSchema>['LOG_LEVEL'];
  database:
    | {
        kind: 'pglite';
        dataDir: string;
        /**
         * A new embedded database (in memory, or a data directory with none yet) starts from this data
         * directory image (PGlite's `dumpDataDir`) instead of an empty cluster. Set by code, never from
         * the environment: the test harness starts each server from one migrated image (1.6 s less of
         * CPU per server), and makes its template data directory from it.
         */
        image?: Blob;
      }
    | {
        kind: 'postgresql';
        url: string;
        poolMax: number;
        /** Connecting, and waiting for a free connection of the pool. */
        connectTimeoutMs: number;
        /** One statement, on the server and, should the server hang, on the client. */
        queryTimeoutMs: number;
        /** Whether the statements marked `reusePlan` run as named prepared statements (default: they do). */
        preparedStatements?: boolean;
        /** PostgreSQL's `max_parallel_workers_per_gather` on the service's connections (default 0: none). */
        parallelWorkers?: number;
      };
  staleThresholdDays: number;
  /**
   * A search reads an organization's deals (contacts) with one plain query up to `plainUpTo` of them;
   * beyond, its `newestWindow` newest rows first (docs/development.md: Search at scale).
   */
  search: { plainUpTo: number; newestWindow: number };
  bootstrapOrg: boolean;
  shutdownTimeoutMs: number;
  limits: LimitsConfig;
  role: ProcessRole;
  webhooks: WebhooksConfig;
  /** The optional OpenAI-compatible language model that words the AI features' narrative; unset: built-in text. */
  languageModel: LanguageModelConfig | undefined;
  admin: AdminConfig;
  /** Browser origins allowed to call the API (CORS); empty: none, `*`: any. */
  corsOrigins: readonly string[];
}>;

/** The dashboard's sign-in: sessions, cookies and the links the server prints. */
export type AdminConfig = Readonly<{
  /**
   * Where people reach the server (`https://crm.example.com`), for the links it prints and, when https,
   * `Secure` cookies. Unset: the listening address, and the browser's own origin is trusted.
   */
  publicUrl: string | undefined;
  /** Signs session cookies; unset, a random secret is made once and kept in the database. */
  authSecret: string | undefined;
  sessionHours: number;
  /** Sign-in attempts allowed per 15 minutes from one client address, and for one account. */
  signInAttempts: Readonly<{ perAddress: number; perAccount: number }>;
}>;

export type LanguageModelConfig = Readonly<{
  model: string;
  /** An OpenAI-compatible endpoint (a local model server works); unset: OpenAI's own. */
  baseUrl: string | undefined;
  apiKey: string | undefined;
  timeoutMs: number;
}>;

export type WebhooksConfig = Readonly<{
  /** Deliver to loopback, private, link-local and metadata addresses (local development and tests). */
  allowPrivate: boolean;
  timeoutMs: number;
  /** Delay before each retry, in milliseconds; its length is the number of retries. */
  retryScheduleMs: readonly number[];
  /** Consecutive failed attempts after which an endpoint is deactivated. */
  maxConsecutiveFailures: number;
  retentionDays: number;
  /** How long events stay in the event feed (`GET /events`), delivered or not. */
  eventsRetentionDays: number;
  /** Deliveries in flight at once in one worker process. */
  concurrency: number;
  pollIntervalMs: number;
  /** Encrypts signing secrets at rest (AES-256-GCM); without it they are stored as they are. */
  encryptionKey: Buffer | undefined;
}>;

/** Rate limits (requests per window and API key) and monthly quotas (calls per organization). */
export type LimitsConfig = Readonly<{
  windowSeconds: number;
  perWindow: Readonly<{
    crud: number;
    ai: number;
    search: number;
    webhooks: number;
    events: number;
    default: number;
  }>;
  /** How many instances share the load: during a Redis outage each enforces 1/N of each limit. */
  instanceCount: number;
  monthlyQuota: Readonly<{ api: number; ai: number }>;
  /** How often counted calls are added to the database. */
  flushIntervalMs: number;
  /** How long an organization's own quotas, once read, are trusted before being read again. */
  quotaRefreshMs: number;
  /** Set in cluster mode: counters live in Redis, shared by every instance. */
  redis?: Readonly<{ url: string; keyPrefix: string }>;
}>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * Reads and validates the environment once. Nothing else in the code base reads `process.env`:
 * a bad variable stops start-up with a message that names it.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  // Empty strings count as unset, as a shell `VAR=` usually means.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = EnvSchema.safeParse(cleaned);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new ConfigError(`Invalid configuration: ${problems}`);
  }
  const e = parsed.data;
  // The embedded database belongs to one process: an API-only process there would leave events undelivered.
  if (e.CRM_ROLE !== 'all' && !e.DATABASE_URL)
    throw new ConfigError(
      `Invalid configuration: CRM_ROLE: '${e.CRM_ROLE}' needs DATABASE_URL (the embedded database serves one process, which runs both)`,
    );
  return Object.freeze({
    env: e.NODE_ENV,
    host: e.HOST,
    port: e.PORT,
    logLevel: e.LOG_LEVEL,
    database: e.DATABASE_URL
      ? {
          kind: 'postgresql' as const,
          url: e.DATABASE_URL,
          poolMax: e.DATABASE_POOL_MAX,
          connectTimeoutMs: e.DATABASE_CONNECT_TIMEOUT_MS,
          queryTimeoutMs: e.DATABASE_QUERY_TIMEOUT_MS,
          preparedStatements: e.DATABASE_PREPARED_STATEMENTS,
          parallelWorkers: e.DATABASE_PARALLEL_WORKERS,
        }
      : { kind: 'pglite' as const, dataDir: e.CRM_DATA_DIR },
    staleThresholdDays: e.CRM_STALE_THRESHOLD_DAYS,
    search: { plainUpTo: e.CRM_SEARCH_PLAIN_UP_TO, newestWindow: e.CRM_SEARCH_NEWEST_WINDOW },
    bootstrapOrg: e.CRM_BOOTSTRAP_ORG,
    shutdownTimeoutMs: e.CRM_SHUTDOWN_TIMEOUT_MS,
    limits: {
      windowSeconds: e.CRM_RATE_LIMIT_WINDOW_SECONDS,
      perWindow: {
        crud: e.CRM_RATE_LIMIT_CRUD,
        ai: e.CRM_RATE_LIMIT_AI,
        search: e.CRM_RATE_LIMIT_SEARCH,
        webhooks: e.CRM_RATE_LIMIT_WEBHOOKS,
        events: e.CRM_RATE_LIMIT_EVENTS,
        default: e.CRM_RATE_LIMIT_DEFAULT,
      },
      instanceCount: e.CRM_INSTANCE_COUNT,
      monthlyQuota: { api: e.CRM_API_QUOTA_MONTHLY, ai: e.CRM_AI_QUOTA_MONTHLY },
      flushIntervalMs: e.CRM_USAGE_FLUSH_INTERVAL_MS,
      quotaRefreshMs: e.CRM_QUOTA_REFRESH_MS,
      ...(e.REDIS_URL ? { redis: { url: e.REDIS_URL, keyPrefix: e.CRM_REDIS_PREFIX } } : {}),
    },
    role: e.CRM_ROLE,
    webhooks: Object.freeze({
      allowPrivate: e.CRM_WEBHOOKS_ALLOW_PRIVATE,
      timeoutMs: e.CRM_WEBHOOKS_TIMEOUT_MS,
      retryScheduleMs: Object.freeze(e.CRM_WEBHOOKS_RETRY_SCHEDULE),
      maxConsecutiveFailures: e.CRM_WEBHOOKS_MAX_CONSECUTIVE_FAILURES,
      retentionDays: e.CRM_WEBHOOKS_RETENTION_DAYS,
      eventsRetentionDays: e.CRM_EVENTS_RETENTION_DAYS,
      concurrency: e.CRM_WEBHOOKS_CONCURRENCY,
      pollIntervalMs: e.CRM_WEBHOOKS_POLL_INTERVAL_MS,
      encryptionKey: e.CRM_WEBHOOKS_ENCRYPTION_KEY,
    }),
    languageModel: e.CRM_AI_MODEL
      ? {
          model: e.CRM_AI_MODEL,
          baseUrl: e.CRM_AI_BASE_URL,
          apiKey: e.CRM_AI_API_KEY,
          timeoutMs: e.CRM_AI_TIMEOUT_MS,
        }
      : undefined,
    corsOrigins: Object.freeze(e.CRM_CORS_ORIGINS ?? []),
    admin: Object.freeze({
      publicUrl: e.CRM_PUBLIC_URL?.replace(/\/+$/, ''),
      authSecret: e.CRM_AUTH_SECRET,
      sessionHours: e.CRM_SESSION_HOURS,
      signInAttempts: {
        perAddress: e.CRM_SIGN_IN_ATTEMPTS_PER_ADDRESS,
        perAccount: e.CRM_SIGN_IN_ATTEMPTS_PER_ACCOUNT,
      },
    }),
  });
}
