import { fileURLToPath } from 'node:url';
import { z } from 'zod';

/** The checkout's own `data/` folder: the embedded database lives here unless CRM_DATA_DIR says otherwise. */
const DEFAULT_DATA_DIR = fileURLToPath(new URL('../../../data', import.meta.url));

const booleanFlag = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');

const EnvSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  HOST: z.string().min(1).default('0.0.0.0'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/ }).optional(),
  CRM_DATA_DIR: z.string().min(1).default(DEFAULT_DATA_DIR),
  DATABASE_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
  CRM_STALE_THRESHOLD_DAYS: z.coerce.number().int().min(1).max(365).default(14),
  CRM_BOOTSTRAP_ORG: booleanFlag.default(true),
  CRM_SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(0).default(10_000),
  CRM_AI_MODEL: z.string().min(1).optional(),
  CRM_AI_BASE_URL: z.url({ protocol: /^https?$/ }).optional(),
  CRM_AI_API_KEY: z.string().min(1).optional(),
  CRM_AI_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(8_000),
});

export type Config = Readonly<{
  env: 'development' | 'production' | 'test';
  host: string;
  port: number;
  logLevel: z.infer<typeof EnvSchema>['LOG_LEVEL'];
  database: { kind: 'pglite'; dataDir: string } | { kind: 'postgresql'; url: string; poolMax: number };
  staleThresholdDays: number;
  bootstrapOrg: boolean;
  shutdownTimeoutMs: number;
  /** The optional OpenAI-compatible language model that words the AI features' narrative; unset: built-in text. */
  languageModel: LanguageModelConfig | undefined;
}>;

export type LanguageModelConfig = Readonly<{
  model: string;
  /** An OpenAI-compatible endpoint (a local model server works); unset: OpenAI's own. */
  baseUrl: string | undefined;
  apiKey: string | undefined;
  timeoutMs: number;
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
  return Object.freeze({
    env: e.NODE_ENV,
    host: e.HOST,
    port: e.PORT,
    logLevel: e.LOG_LEVEL,
    database: e.DATABASE_URL
      ? { kind: 'postgresql' as const, url: e.DATABASE_URL, poolMax: e.DATABASE_POOL_MAX }
      : { kind: 'pglite' as const, dataDir: e.CRM_DATA_DIR },
    staleThresholdDays: e.CRM_STALE_THRESHOLD_DAYS,
    bootstrapOrg: e.CRM_BOOTSTRAP_ORG,
    shutdownTimeoutMs: e.CRM_SHUTDOWN_TIMEOUT_MS,
    languageModel: e.CRM_AI_MODEL
      ? {
          model: e.CRM_AI_MODEL,
          baseUrl: e.CRM_AI_BASE_URL,
          apiKey: e.CRM_AI_API_KEY,
          timeoutMs: e.CRM_AI_TIMEOUT_MS,
        }
      : undefined,
  });
}
