import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { actFor } from '../auth.ts';
import { type Context, createRequestContext, type Principal, type Services } from '../context.ts';
import type { ErrorBody } from '../errors.ts';
import { IdempotencyKey } from '../idempotency.ts';
import { quotaFigures, rateFigures } from '../limits/limit-check.ts';
import type { Admission } from '../limits/limits.ts';
import { OPERATIONS, type Operation } from '../routes.ts';
import { allows } from '../scopes.ts';
import { serveCall } from '../serve-call.ts';

/** The optional argument that carries `Idempotency-Key` on the creates that honour it. */
const IDEMPOTENCY_ARGUMENT = 'idempotency_key';

/** Who is calling through MCP: the services, and the headers (the API key) of the connection. */
export interface McpCaller {
  services: Services;
  headers: Context['headers'];
  /** Set when the door already authenticated the key for this request (Streamable HTTP). */
  principal?: Principal;
  /** The key's scopes, for the tool list (each call is still checked on its own). */
  scopes: readonly string[];
  /** The key's organization, for the tool list (its own fields in the tools' schemas). */
  orgId: string;
  requestId: string;
}

type JsonSchema = { [key: string]: unknown };

/**
 * A zod schema as an MCP tool schema: JSON Schema 2020-12 whose root is an object (a schema registered
 * under a name comes out as a `$ref` to it, which MCP clients do not accept at the root).
 */
function objectSchema(schema: z.ZodType | undefined, io: 'input' | 'output'): JsonSchema {
  if (!schema || (schema as { def?: { type?: string } }).def?.type === 'void')
    return { type: 'object', properties: {}, additionalProperties: false };
  const {
    $schema: _dialect,
    $ref,
    $defs,
    ...rest
  } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as {
    $schema?: string;
    $ref?: string;
    $defs?: Record<string, JsonSchema>;
  } & JsonSchema;
  if (!$ref) return $defs ? { ...rest, $defs } : rest;
  const name = $ref.replace('#/$defs/', '');
  const { [name]: root, ...others } = $defs ?? {};
  return Object.keys(others).length > 0 ? { ...root, $defs: others } : { ...root };
}

function inputSchemaOf(op: Operation): Tool['inputSchema'] {
  const schema = objectSchema(op.input, 'input') as Tool['inputSchema'];
  if (!op.idempotencyKey) return schema;
  return {
    ...schema,
    properties: {
      ...schema.properties,
      [IDEMPOTENCY_ARGUMENT]: objectSchema(IdempotencyKey, 'input'),
    },
  };
}

function toolOf(op: Operation): Tool {
  return {
    name: op.operationId,
    title: op.summary,
    description: [op.agentHint, op.description].filter(Boolean).join('\n\n'),
    inputSchema: inputSchemaOf(op),
    outputSchema: objectSchema(op.output, 'output') as Tool['outputSchema'],
    annotations: {
      title: op.summary,
      readOnlyHint: op.readOnly,
      destructiveHint: op.destructive,
      idempotentHint: op.idempotent,
      openWorldHint: false,
    },
  };
}

/** Every operation as a tool, built once: the same list the OpenAPI document describes. */
export const TOOLS: readonly Tool[] = OPERATIONS.map(toolOf);
const OPERATION_BY_TOOL = new Map(OPERATIONS.map((op) => [op.operationId, op]));

/** The tools a key with these scopes may call: the only ones it is shown. */
export function toolsFor(scopes: readonly string[]): Tool[] {
  return TOOLS.filter((tool) => {
    const op = OPERATION_BY_TOOL.get(tool.name);
    return op !== undefined && allows(scopes, op.scope);
  });
}
/** The call's rate limit and quotas, for the result's `_meta`: what the REST headers say. */
function limitsMeta({ rate, quotas, period }: Admission): Record<string, unknown> {
  return {
    rate_limit: rateFigures(rate),
    quotas: Object.fromEntries(quotas.map((q) => [q.quota, quotaFigures(q, period)])),
  };
}

function errorResult(body: ErrorBody): CallToolResult {
  const retry = body.retry_after_seconds === undefined ? '' : ` Retry after ${body.retry_after_seconds} s.`;
  return {
    isError: true,
    content: [{ type: 'text', text: `${body.error} (${body.code}).${retry}` }],
    _meta: { error: body },
  };
}

/**
 * One tool call: admitted like a REST call (API key, the operation's rate-limit group, the monthly
 * quotas), then the operation's procedure, then the answer as structured content with the quota state in
 * `_meta`. A failure is a tool error (`isError`) with the contract's error body in `_meta`, never a stack.
 */
export async function callTool(
  caller: McpCaller,
  name: string,
  args: Record<string, unknown> = {},
): Promise<CallToolResult> {
  const op = OPERATION_BY_TOOL.get(name);
  if (!op) return errorResult({ error: `Unknown tool: ${name}`, code: 'not_found' });
  const { [IDEMPOTENCY_ARGUMENT]: idempotencyKey, ...input } = args;
  const unknown = Object.keys(input).filter((key) => !op.inputKeys.includes(key));
  if (unknown.length > 0 || (idempotencyKey !== undefined && !op.idempotencyKey))
    return errorResult({
      error: `Unknown argument${unknown.length > 1 ? 's' : ''}: ${(unknown.length > 0 ? unknown : [IDEMPOTENCY_ARGUMENT]).join(', ')}`,
      code: 'invalid_request',
    });
  if (idempotencyKey !== undefined && !IdempotencyKey.safeParse(idempotencyKey).success)
    return errorResult({
      error: `${IDEMPOTENCY_ARGUMENT}: expected 1 to 255 printable ASCII characters`,
      code: 'invalid_request',
    });

  // Only the argument says Idempotency-Key: a header on the MCP request would apply to every create in it.
  const { 'idempotency-key': _header, ...headers } = caller.headers;
  if (typeof idempotencyKey === 'string') headers['idempotency-key'] = idempotencyKey;
  const ctx = createRequestContext(caller.services, { requestId: caller.requestId, headers, door: 'mcp' });
  if (caller.principal) actFor(ctx, caller.principal);
  const outcome = await serveCall(ctx, op, op.inputKeys.length > 0 ? input : undefined);
  if (!outcome.ok) return errorResult(outcome.error);
  return {
    content: [{ type: 'text', text: JSON.stringify(outcome.result) }],
    structuredContent: outcome.result as Record<string, unknown>,
    _meta: outcome.admission ? limitsMeta(outcome.admission) : {},
  } satisfies CallToolResult;
}
