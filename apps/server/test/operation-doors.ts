import type { Operation } from '@crm/api';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ApiResponse, TestServer } from './harness.ts';

/** An operation's input as tRPC and MCP take it: its path parameters and the fields of its body. */
export type OperationInput = Record<string, unknown>;

/** The operation's path with each parameter taken from `input`. */
export const pathOf = (op: Operation, input: OperationInput) =>
  op.path.replace(/\{([^}]+)\}/g, (_, name: string) => String(input[name]));

/** `op` over REST with `key`: its path parameters in the path, the rest as the JSON body if it takes one. */
export function viaRest(
  s: TestServer,
  key: string,
  op: Operation,
  input: OperationInput,
): Promise<ApiResponse> {
  const body = Object.fromEntries(Object.entries(input).filter(([name]) => !op.pathParams.includes(name)));
  return s.api(pathOf(op, input), { method: op.method, key, ...(op.takesBody ? { json: body } : {}) });
}

/** What a tRPC call answered: its HTTP status, and for a failure the error body and message. */
export interface TrpcAnswer {
  status: number;
  code: string | undefined;
  body: { code?: string; error?: string } | undefined;
  message: string | undefined;
}

/** `op` over tRPC with `key`: queries as GET with `input` (when it has any), mutations as POST. */
export async function viaTrpc(
  s: TestServer,
  key: string,
  op: Operation,
  input: OperationInput,
): Promise<TrpcAnswer> {
  const isQuery = op.method === 'GET';
  const query =
    isQuery && Object.keys(input).length > 0 ? `?input=${encodeURIComponent(JSON.stringify(input))}` : '';
  const res = await fetch(`${s.url}/trpc/${op.procedure}${query}`, {
    method: isQuery ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    ...(isQuery ? {} : { body: JSON.stringify(input) }),
  });
  const answer = (await res.json()) as {
    error?: { message?: string; data?: { body?: { code?: string; error?: string } } };
  };
  const body = answer.error?.data?.body;
  return { status: res.status, code: body?.code, body, message: answer.error?.message };
}

/** `op` as an MCP tool, through `client` (connected with the caller's key). */
export function viaMcp(client: Client, op: Operation, input: OperationInput): Promise<CallToolResult> {
  return client.callTool({ name: op.operationId, arguments: input }) as Promise<CallToolResult>;
}

/** The error code of a failed tool call (its `_meta.error`), or undefined. */
export const mcpErrorCode = (result: CallToolResult) =>
  (result._meta as { error?: { code?: string } } | undefined)?.error?.code;
