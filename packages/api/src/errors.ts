import { TRPCError } from '@trpc/server';
import type { TRPC_ERROR_CODE_KEY } from '@trpc/server/rpc';
import { ZodError, z } from 'zod';

/** The largest request body any door reads. */
export const MAX_BODY_BYTES = 1024 * 1024;
const MAX_BODY_TEXT = '1 MB';

/**
 * The closed set of error codes a client can see: the HTTP status each answers with, and when. This table
 * is the one place a failure becomes a status (REST, tRPC and MCP read it), and what the OpenAPI document
 * and docs/api/errors.md say of each code.
 */
export const ERRORS = {
  invalid_request: {
    status: 400,
    when: 'The input does not fit: the message names the field and what was expected',
  },
  invalid_json: { status: 400, when: 'The body is not valid JSON' },
  missing_api_key: { status: 401, when: 'No API key: send `Authorization: Bearer <key>`' },
  invalid_api_key: { status: 401, when: 'The API key is unknown or revoked' },
  expired_api_key: { status: 401, when: 'The API key has expired' },
  not_signed_in: { status: 401, when: 'Dashboard: no session, or it ended' },
  forbidden: {
    status: 403,
    when: 'Dashboard: the role may not do this, or the request did not come from its pages',
  },
  insufficient_scope: {
    status: 403,
    when: 'The API key lacks the scope the operation needs; the call counts against no limit',
  },
  not_found: { status: 404, when: 'No such resource (another organization’s ids alike) or endpoint' },
  method_not_allowed: { status: 405, when: 'The path takes other methods: `Allow` lists them' },
  idempotency_key_in_use: {
    status: 409,
    when: 'A request with this `Idempotency-Key` is still running: retry in a moment',
  },
  conflict: {
    status: 409,
    when: 'The write conflicts with the data as it is (a unique custom field’s value another record holds, a rule the records break, a stage deals are in, the default pipeline): the message says with what and how to proceed; `conflicting_id` names the record that holds a value',
  },
  webhook_inactive: { status: 409, when: 'The webhook endpoint is deactivated: activate it first' },
  last_admin: { status: 409, when: 'Dashboard: an organization keeps at least one admin' },
  payload_too_large: { status: 413, when: `The body is over ${MAX_BODY_TEXT}` },
  unsupported_media_type: { status: 415, when: 'The body is not `application/json`' },
  idempotency_key_reused: { status: 422, when: 'The `Idempotency-Key` was used before with another input' },
  rate_limited: {
    status: 429,
    when: 'Over the rate limit of the operation’s group: `Retry-After` says when to try again',
  },
  api_quota_exceeded: {
    status: 429,
    when: 'The monthly API call quota is used up: `Retry-After` says when it resets',
  },
  ai_quota_exceeded: {
    status: 429,
    when: 'The monthly AI call quota is used up: `Retry-After` says when it resets',
  },
  internal_error: { status: 500, when: 'The server failed (never with details or a stack)' },
  service_unavailable: {
    status: 503,
    when: 'The database (or the sign-in service) is not answering: `Retry-After` says when to try again',
  },
} as const satisfies Record<string, { status: number; when: string }>;
export type ErrorCode = keyof typeof ERRORS;
export const ERROR_CODE_NAMES = Object.keys(ERRORS) as [ErrorCode, ...ErrorCode[]];

/** The contract's error body (section 7); the 429 fields appear only on 429s. */
export const ErrorBodySchema = z.object({
  error: z.string().describe('What went wrong, naming the field for invalid input'),
  code: z.enum(ERROR_CODE_NAMES).optional(),
  retry_after_seconds: z.number().int().min(0).optional(),
  limit: z.number().int().min(1).optional(),
  used: z.number().int().min(0).optional(),
  remaining: z.number().int().min(0).optional(),
  reset_at: z.iso.datetime().optional(),
  conflicting_id: z.uuid().optional().describe('On a 409 `conflict`: the record that holds the value'),
});
export type ErrorBody = z.infer<typeof ErrorBodySchema>;

/** The one error type of the domain. Anything else that escapes a request is a 500 with no details. */
export class ApiError extends Error {
  override name = 'ApiError';
  readonly code: ErrorCode;
  readonly extra: Omit<ErrorBody, 'error' | 'code'>;
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    message: string,
    options: { extra?: Omit<ErrorBody, 'error' | 'code'>; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.code = code;
    this.extra = options.extra ?? {};
    this.headers = options.headers ?? {};
  }

  get status(): number {
    return ERRORS[this.code].status;
  }
}

export const notFound = (what: string) => new ApiError('not_found', `${what} not found`);

/** A 409 `conflict`; `conflictingId` names the record that holds the value. */
export const conflict = (message: string, conflictingId?: string) =>
  new ApiError('conflict', message, conflictingId ? { extra: { conflicting_id: conflictingId } } : {});
const tooLarge = () =>
  new ApiError('payload_too_large', `Request body is larger than the ${MAX_BODY_TEXT} limit`);

const TRPC_CODE_BY_STATUS: Record<number, TRPC_ERROR_CODE_KEY> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_SUPPORTED',
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  422: 'UNPROCESSABLE_CONTENT',
  429: 'TOO_MANY_REQUESTS',
  500: 'INTERNAL_SERVER_ERROR',
  503: 'SERVICE_UNAVAILABLE',
};

/** Wraps an ApiError so tRPC carries it; `toErrorResponse` unwraps it again at the edge. */
export function toTRPCError(err: ApiError): TRPCError {
  return new TRPCError({
    code: TRPC_CODE_BY_STATUS[err.status] ?? 'INTERNAL_SERVER_ERROR',
    message: err.message,
    cause: err,
  });
}

function describePath(path: PropertyKey[]): string {
  return path
    .map((p) => (typeof p === 'number' ? `[${p}]` : String(p)))
    .join('.')
    .replace(/\.\[/g, '[');
}

/** One sentence per problem, each naming the field, e.g. `contact_email: Invalid email address`. */
export function describeZodIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .map((issue) => {
      if (issue.code === 'unrecognized_keys') {
        const where = issue.path.length ? ` in ${describePath(issue.path)}` : '';
        return `Unknown propert${issue.keys.length > 1 ? 'ies' : 'y'}${where}: ${issue.keys.join(', ')}`;
      }
      const field = describePath(issue.path);
      if (issue.code === 'invalid_type') {
        // Zod words it "Invalid input: expected string, received number"; a missing field is "received undefined".
        const received = /received (\w+)$/.exec(issue.message)?.[1];
        if (received === 'undefined' || (received === undefined && issue.input === undefined))
          return `${field || 'body'}: Required`;
        return `${field || 'body'}: expected ${issue.expected}${received ? `, got ${received}` : ''}`;
      }
      return field ? `${field}: ${issue.message}` : issue.message;
    })
    .join('; ');
}

/** Errors raised by Koa's body parser (http-errors), recognized by their shape. */
type HttpLikeError = {
  status?: number;
  statusCode?: number;
  type?: string;
  expose?: boolean;
  message: string;
  /** zlib's and Brotli's errors carry these instead of a status. */
  code?: unknown;
  errno?: unknown;
};

function fromHttpLikeError(err: HttpLikeError): ApiError | undefined {
  // zlib's (Z_DATA_ERROR, Z_BUF_ERROR) and Brotli's (ERR__ERROR_…) own errors, raised while the body parser
  // decodes a body its Content-Encoding misdescribes: the client's mistake, not the server's (was a 500).
  if (typeof err.errno === 'number' && typeof err.code === 'string' && /^(Z_|ERR__ERROR_)/.test(err.code))
    return new ApiError(
      'invalid_request',
      `Request body could not be decoded as its Content-Encoding says (${err.message})`,
    );
  const status = err.status ?? err.statusCode;
  if (status === 413) return tooLarge();
  if (status === 415) return new ApiError('unsupported_media_type', err.message);
  // JSON, but not an object or array (`null`, `5`, `"x"`): the parser's strict mode refuses it.
  if (status === 400 && err.message.includes('only supports object and array'))
    return new ApiError('invalid_request', 'Request body must be a JSON object');
  if (status === 400 && (err.type === 'entity.parse.failed' || err.message.toLowerCase().includes('json')))
    return new ApiError('invalid_json', 'Request body is not valid JSON');
  if (status === 400) return new ApiError('invalid_request', err.message);
  return undefined;
}

/** Seconds a client is asked to wait when the database is not answering. */
const UNAVAILABLE_RETRY_SECONDS = 5;

const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH']);
/**
 * SQLSTATEs of a database that is unreachable, shutting down, full, cut a statement off at its timeout, or
 * ended the transaction in a deadlock or serialization failure: each is worth retrying a moment later.
 */
const UNAVAILABLE_SQLSTATE = /^(08...|57014|57P0[123]|53300|40P01|40001)$/;
const UNAVAILABLE_MESSAGE =
  /Query read timeout|timeout exceeded when trying to connect|Connection terminated|connection timeout|Connection ended unexpectedly|did not answer a probe/i;

/** Whether `err` (or what caused it) says the database did not answer in time or cannot be reached. */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (
    let e = err, depth = 0;
    e && typeof e === 'object' && depth < 5;
    e = (e as { cause?: unknown }).cause, depth++
  ) {
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && (UNREACHABLE_CODES.has(code) || UNAVAILABLE_SQLSTATE.test(code)))
      return true;
    if (typeof message === 'string' && UNAVAILABLE_MESSAGE.test(message)) return true;
  }
  return false;
}

/**
 * What a write referred to that another request deleted after this one had read it (a foreign key failing
 * for the row it inserts), if that is what `err` (or what caused it) is: a deal, a deal's stage or
 * pipeline, a company, or the caller's whole organization (deleted on another instance while this one still knew its
 * key, see KEY_CACHE_TTL_MS).
 */
function goneMeanwhile(err: unknown): 'deal' | 'company' | 'stage' | 'organization' | undefined {
  for (
    let e = err, depth = 0;
    e && typeof e === 'object' && depth < 5;
    e = (e as { cause?: unknown }).cause, depth++
  ) {
    const { code, constraint } = e as { code?: unknown; constraint?: unknown };
    if (code !== '23503' || typeof constraint !== 'string') continue;
    if (constraint.endsWith('_deal_id_fkey')) return 'deal';
    if (constraint.endsWith('_company_id_fkey')) return 'company';
    // A deal written into a stage or pipeline deleted meanwhile (another instance still knew its stages,
    // see STAGE_CACHE_TTL_MS).
    if (constraint === 'deals_stage_id_fkey' || constraint === 'deals_pipeline_id_fkey') return 'stage';
    // The organization's keys go with it: an Idempotency-Key record names the key that made the call.
    if (constraint.endsWith('_org_id_fkey') || constraint.endsWith('_api_key_id_fkey')) return 'organization';
  }
  return undefined;
}

/**
 * The database's refusal of a second holder of a unique custom value (SQLSTATE CRM09, raised by the
 * custom_unique_values trigger, migration …custom_fields), as the 409 a client reads.
 */
function uniqueValueTaken(err: unknown): ApiError | undefined {
  for (
    let e = err, depth = 0;
    e && typeof e === 'object' && depth < 5;
    e = (e as { cause?: unknown }).cause, depth++
  ) {
    const { code, detail } = e as { code?: unknown; detail?: unknown };
    if (code !== 'CRM09' || typeof detail !== 'string') continue;
    const { field, holder, object } = JSON.parse(detail) as { field: string; holder: string; object: string };
    return new ApiError(
      'conflict',
      `${field}: the value is already held by ${object.replace(/s$/, '')} ${holder} (the field is unique)`,
      { extra: { conflicting_id: holder } },
    );
  }
  return undefined;
}

/** Maps anything thrown while handling a request to the contract's status and body. Never leaks a stack. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const taken = uniqueValueTaken(err);
  if (taken) return taken;
  switch (goneMeanwhile(err)) {
    case 'deal':
      return notFound('Deal');
    case 'company':
      return notFound('Company');
    case 'stage':
      return new ApiError(
        'conflict',
        'stage_id: the stage (or its pipeline) was deleted meanwhile; read the pipeline’s stages again',
      );
    case 'organization':
      return new ApiError('invalid_api_key', 'Invalid or revoked API key');
  }
  if (isDatabaseUnavailable(err) || (err instanceof TRPCError && isDatabaseUnavailable(err.cause)))
    return new ApiError('service_unavailable', 'The database is not answering; try again shortly', {
      headers: { 'Retry-After': String(UNAVAILABLE_RETRY_SECONDS) },
    });
  if (err instanceof ZodError) return new ApiError('invalid_request', describeZodIssues(err.issues));
  if (err instanceof TRPCError) {
    if (err.cause instanceof ApiError) return err.cause;
    // An answer that fails its own output schema is the server's fault, not the request's.
    if (err.code === 'INTERNAL_SERVER_ERROR') return new ApiError('internal_error', 'Internal server error');
    if (err.cause instanceof ZodError)
      return new ApiError('invalid_request', describeZodIssues(err.cause.issues));
    // Zod v4 errors cross realms (tRPC wraps them), so recognise them by name too.
    if (err.cause && (err.cause as Error).name === 'ZodError' && 'issues' in err.cause)
      return new ApiError('invalid_request', describeZodIssues((err.cause as ZodError).issues));
    switch (err.code) {
      case 'PARSE_ERROR':
        return new ApiError('invalid_json', 'Request body is not valid JSON');
      case 'PAYLOAD_TOO_LARGE':
        return tooLarge();
      case 'UNSUPPORTED_MEDIA_TYPE':
        return new ApiError('unsupported_media_type', 'Content-Type must be application/json');
      case 'NOT_FOUND':
        return new ApiError('not_found', 'Not found');
      case 'METHOD_NOT_SUPPORTED':
        return new ApiError('method_not_allowed', err.message);
      case 'BAD_REQUEST':
        return new ApiError('invalid_request', err.message);
      default:
        return new ApiError('internal_error', 'Internal server error');
    }
  }
  if (err && typeof err === 'object' && 'message' in err) {
    const mapped = fromHttpLikeError(err as HttpLikeError);
    if (mapped) return mapped;
  }
  return new ApiError('internal_error', 'Internal server error');
}

/**
 * RFC 6750's challenge, which every 401 about the API key carries on every door: the key is a bearer
 * token, and what was wrong with the one sent.
 */
const BEARER_CHALLENGES: Partial<Record<string, string>> = {
  missing_api_key: 'Bearer realm="crm"',
  invalid_api_key:
    'Bearer realm="crm", error="invalid_token", error_description="Invalid or revoked API key"',
  expired_api_key: 'Bearer realm="crm", error="invalid_token", error_description="The API key has expired"',
};

export function toErrorResponse(err: unknown): {
  status: number;
  body: ErrorBody;
  headers: Record<string, string>;
} {
  const apiError = toApiError(err);
  const challenge = BEARER_CHALLENGES[apiError.code];
  return {
    status: apiError.status,
    body: { error: apiError.message, code: apiError.code, ...apiError.extra },
    headers: challenge ? { ...apiError.headers, 'WWW-Authenticate': challenge } : apiError.headers,
  };
}
