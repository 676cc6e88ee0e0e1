import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { Protocol } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { z } from 'zod';
import { describeZodIssues } from '../errors.ts';
import { buildOpenApiDocument } from '../openapi.ts';
import { scopeToOrg } from '../org-scope.ts';
import { withOrganizationFields } from './custom-schemas.ts';
import { withFilterFields } from './filter-schemas.ts';
import { getPrompt, listPrompts } from './prompts.ts';
import { callTool, type McpCaller, toolsFor } from './tools.ts';

export const MCP_SERVER_INFO = { name: 'headless-crm', title: 'Headless CRM', version: '1.0.0' };

/** Protocol's own registration: without Server's tools/call wrapper, which answers bad params with a dump. */
const registerRequestHandler = Protocol.prototype.setRequestHandler as unknown as (
  this: Server,
  schema: z.ZodType,
  handler: (request: unknown) => unknown,
) => void;

/**
 * Registers `handler` for `schema`'s method so that a request whose params do not fit answers JSON-RPC
 * -32602 Invalid params naming the field ("params.arguments: expected record, got null"), which an agent
 * can correct: the SDK parses each request before any handler and answered -32603 Internal error with
 * zod's JSON for a message. The SDK's schemas still decide what fits.
 */
export function onRequest<S extends z.ZodObject<{ method: z.ZodLiteral<string> }>>(
  server: Server,
  schema: S,
  handler: (request: z.output<S>) => unknown,
): void {
  const methodOnly = (schema as z.ZodObject<{ method: z.ZodLiteral<string> }>).pick({ method: true }).loose();
  registerRequestHandler.call(server, methodOnly, (request) => {
    const parsed = schema.safeParse(request);
    if (!parsed.success) throw new McpError(ErrorCode.InvalidParams, describeZodIssues(parsed.error.issues));
    return handler(parsed.data);
  });
}

/** MCP's "resource not found" (the specification's -32002). */
const RESOURCE_NOT_FOUND = -32002;

const INSTRUCTIONS =
  'Tools read and change this organization’s CRM: deals, their contacts (stakeholders), the pipeline, ' +
  'search, webhooks, usage, and AI insights (analyze, predict, briefing, coaching) that count against the ' +
  'monthly AI quota. Find ids with search or deals-list before calling a tool that takes one. Every result ' +
  'carries the rate limit and quotas in _meta; a limited call says when to retry.';

const STATIC_RESOURCES = [
  {
    uri: 'crm://pipeline/stages',
    name: 'pipeline-stages',
    title: 'Pipeline stages',
    description: 'The stages of the default pipeline, in order, with their ids, types and probabilities.',
    mimeType: 'application/json',
  },
  {
    uri: 'crm://openapi.json',
    name: 'openapi',
    title: 'OpenAPI document',
    description: 'The REST API these tools are the operations of, as OpenAPI 3.1.',
    mimeType: 'application/json',
  },
];

let openApiText: string | undefined;

/**
 * One schema validator for every server: the SDK builds an Ajv instance per Server unless given one, and a
 * stateless HTTP server is built per request (a fifth of a small call's CPU went there).
 */
const validator = new AjvJsonSchemaValidator();

/** A resource read through its operation, so it is admitted and counted like the tool call. */
async function readThroughTool(caller: McpCaller, uri: string, tool: string, args: Record<string, unknown>) {
  const result = await callTool(caller, tool, args);
  if (result.isError) {
    const error = (result._meta as { error?: { code?: string; error: string } }).error;
    throw new McpError(
      error?.code === 'not_found' ? RESOURCE_NOT_FOUND : ErrorCode.InvalidRequest,
      error?.error ?? 'failed',
      {
        uri,
        ...error,
      },
    );
  }
  const first = result.content[0];
  const text = first?.type === 'text' ? first.text : '';
  return { contents: [{ uri, mimeType: 'application/json', text }], _meta: result._meta };
}

/**
 * The MCP server of one connection (stdio) or one request (stateless Streamable HTTP): the API's
 * operations as tools, generated from the route table, plus resources and prompts. Every tool call goes
 * through the same admission and procedures as REST.
 */
export function createMcpServer(caller: McpCaller): Server {
  const server = new Server(MCP_SERVER_INFO, {
    capabilities: { tools: {}, resources: {}, prompts: {} },
    instructions: INSTRUCTIONS,
    jsonSchemaValidator: validator,
  });
  onRequest(server, ListToolsRequestSchema, async () => {
    const em = scopeToOrg(caller.services.orm.em.fork(), caller.orgId);
    return {
      tools: await withFilterFields(
        em,
        await withOrganizationFields(em, toolsFor(caller.scopes)),
        caller.scopes,
      ),
    };
  });
  onRequest(server, CallToolRequestSchema, (request) =>
    callTool(caller, request.params.name, request.params.arguments),
  );

  onRequest(server, ListResourcesRequestSchema, () => ({ resources: STATIC_RESOURCES }));
  onRequest(server, ListResourceTemplatesRequestSchema, () => ({
    resourceTemplates: [
      {
        uriTemplate: 'crm://deals/{id}',
        name: 'deal',
        title: 'A deal',
        description:
          'A deal with its stakeholders and 20 latest activities (as the deals-get tool returns it).',
        mimeType: 'application/json',
      },
    ],
  }));
  onRequest(server, ReadResourceRequestSchema, async ({ params: { uri } }) => {
    if (uri === 'crm://openapi.json') {
      openApiText ??= JSON.stringify(buildOpenApiDocument());
      return { contents: [{ uri, mimeType: 'application/json', text: openApiText }] };
    }
    if (uri === 'crm://pipeline/stages') return readThroughTool(caller, uri, 'pipeline-stages', {});
    const deal = /^crm:\/\/deals\/([^/]+)$/.exec(uri);
    if (deal) {
      let id: string;
      try {
        id = decodeURIComponent(deal[1] as string);
      } catch {
        throw new McpError(RESOURCE_NOT_FOUND, `Resource not found: ${uri}`, { uri });
      }
      return readThroughTool(caller, uri, 'deals-get', { id });
    }
    throw new McpError(RESOURCE_NOT_FOUND, `Resource not found: ${uri}`, { uri });
  });

  onRequest(server, ListPromptsRequestSchema, () => ({ prompts: listPrompts() }));
  onRequest(server, GetPromptRequestSchema, ({ params }) => {
    let prompt: ReturnType<typeof getPrompt>;
    try {
      prompt = getPrompt(params.name, params.arguments);
    } catch (err) {
      throw new McpError(ErrorCode.InvalidParams, (err as Error).message);
    }
    if (!prompt) throw new McpError(ErrorCode.InvalidParams, `Unknown prompt: ${params.name}`);
    return prompt;
  });
  return server;
}
