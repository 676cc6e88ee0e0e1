import { API_BASE_PATH } from '@crm/config';
import type { z } from 'zod';
import type { ErrorCode } from './errors.ts';
import type { LimitGroup } from './limits/groups.ts';
import { appRouter } from './router.ts';
import type { Scope } from './scopes.ts';
import type { Meta } from './trpc.ts';

export { API_BASE_PATH };

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * One operation of the API, as every door sees it: the REST adapter routes and checks requests with it,
 * the OpenAPI document describes it, and the MCP server offers it as a tool. Read from the procedures'
 * meta, so a new procedure is on every door at once.
 */
export interface Operation {
  /** The tRPC path, `deals.list`. */
  procedure: string;
  /** The OpenAPI operationId and the MCP tool name, `deals-list`. */
  operationId: string;
  method: HttpMethod;
  /** The path template under API_BASE_PATH, `/deals/{id}`. */
  path: string;
  /** Matches a path of this operation, each path parameter a named group. */
  pattern: RegExp;
  pathParams: string[];
  /** The top-level keys of its input (none when it takes none). */
  inputKeys: readonly string[];
  /** The query parameters the operation reads (for operations with a body, those its meta names). */
  queryParams: ReadonlySet<string>;
  /** Whether it reads a JSON body: a POST or PATCH whose input has more than the path's parameters. */
  takesBody: boolean;
  summary: string;
  description: string;
  /** When an AI agent should call it, said for a model. */
  agentHint: string;
  successStatus: 200 | 201 | 202;
  rateLimit: LimitGroup;
  /** Whether a retry with the same `Idempotency-Key` replays the first answer. */
  idempotencyKey: boolean;
  /** The scope an API key needs to call it. */
  scope: Scope;
  /** Every error code the operation can answer with. */
  errors: ErrorCode[];
  input: z.ZodType | undefined;
  output: z.ZodType;
  /** A read: no change anywhere (MCP readOnlyHint). */
  readOnly: boolean;
  /** Deletes something (MCP destructiveHint). */
  destructive: boolean;
  /** Calling it again with the same input changes nothing more (MCP idempotentHint). */
  idempotent: boolean;
}

type ProcedureDef = { _def: { meta?: Meta; inputs?: z.ZodType[]; output?: z.ZodType } };

/**
 * An input schema without its `.optional()`: an operation whose parameters are all optional may take no
 * input at all (`GET /pipeline/health`, and `pipeline.health.query()` on tRPC), and is read as its object.
 */
function unwrapOptional(input: z.ZodType | undefined): z.ZodType | undefined {
  const def = (input as { def?: { type?: string; innerType?: z.ZodType } } | undefined)?.def;
  return def?.type === 'optional' ? def.innerType : input;
}

/** The top-level keys of a procedure's zod input (an object schema), or none (`z.void()`). */
function inputKeys(input: z.ZodType | undefined): string[] {
  const shape = (unwrapOptional(input) as { shape?: Record<string, unknown> } | undefined)?.shape;
  return shape ? Object.keys(shape) : [];
}

/**
 * Whether `input` refuses keys it does not name (z.strictObject, whose catchall is `never`). Every
 * operation's input must: a zod object strips an unknown key without a word, so tRPC answered
 * `{"limit":1,"bogus":1}` where REST refuses the query parameter.
 */
function refusesUnknownKeys(input: z.ZodType | undefined): boolean {
  const catchall = (unwrapOptional(input) as { def?: { catchall?: { def?: { type?: string } } } } | undefined)
    ?.def?.catchall;
  return catchall?.def?.type === 'never';
}

/** The errors every call of `op` can answer, from what it takes, beside those its meta names. */
function errorsOf(op: Omit<Operation, 'errors'>, declared: ErrorCode[]): ErrorCode[] {
  const codes = new Set<ErrorCode>([
    'missing_api_key',
    'invalid_api_key',
    'expired_api_key',
    'insufficient_scope',
    'rate_limited',
    'api_quota_exceeded',
  ]);
  if (op.rateLimit === 'ai') codes.add('ai_quota_exceeded');
  if (inputKeys(op.input).length > 0) codes.add('invalid_request');
  if (op.pathParams.length > 0) codes.add('not_found');
  if (op.method === 'POST' || op.method === 'PUT' || op.method === 'PATCH')
    for (const code of ['invalid_json', 'payload_too_large', 'unsupported_media_type'] as const)
      codes.add(code);
  if (op.idempotencyKey) {
    codes.add('idempotency_key_reused');
    codes.add('idempotency_key_in_use');
  }
  for (const code of declared) codes.add(code);
  codes.add('internal_error');
  codes.add('service_unavailable');
  return [...codes];
}

function collectOperations(): Operation[] {
  const procedures = appRouter._def.procedures as unknown as Record<string, ProcedureDef>;
  const operations: Operation[] = [];
  for (const [procedure, { _def }] of Object.entries(procedures)) {
    const meta = _def.meta;
    if (!meta?.openapi) continue;
    const { method, path, summary = procedure, description = '' } = meta.openapi;
    const pathParams = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] as string);
    const input = _def.inputs?.[0];
    const readsQuery = method === 'GET' || method === 'DELETE';
    if (!meta.scope) throw new Error(`${procedure} names no scope in its meta: every operation needs one`);
    if (inputKeys(input).length > 0 && !refusesUnknownKeys(input))
      throw new Error(`${procedure}'s input is not a z.strictObject: every operation refuses unknown keys`);
    const op: Omit<Operation, 'errors'> = {
      procedure,
      operationId: meta.openapi.operationId ?? procedure.replace(/\./g, '-'),
      method: method as HttpMethod,
      path,
      pattern: new RegExp(`^${path.replace(/\{([^}]+)\}/g, '(?<$1>[^/]+)')}$`),
      pathParams,
      inputKeys: inputKeys(input),
      queryParams: new Set(
        readsQuery ? inputKeys(input).filter((k) => !pathParams.includes(k)) : (meta.query ?? []),
      ),
      takesBody:
        !readsQuery && inputKeys(input).some((k) => !pathParams.includes(k) && !meta.query?.includes(k)),
      summary,
      description,
      agentHint: meta.agentHint ?? '',
      scope: meta.scope,
      successStatus: meta.successStatus ?? 200,
      rateLimit: meta.rateLimit ?? 'default',
      idempotencyKey: meta.idempotencyKey ?? false,
      input,
      output: _def.output as z.ZodType,
      readOnly: method === 'GET' || meta.readOnly === true,
      destructive: method === 'DELETE',
      idempotent: method !== 'POST' || meta.readOnly === true,
    };
    operations.push({ ...op, errors: errorsOf(op, meta.errors ?? []) });
  }
  return operations;
}

/** Every documented operation, in the routers' order. */
export const OPERATIONS: readonly Operation[] = collectOperations();
