import { ApiError, authenticate, createMcpServer, createRequestContext, type Services } from '@crm/api';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import type { Middleware } from 'koa';

export const MCP_PATH = '/mcp';

/**
 * MCP over Streamable HTTP at /mcp, stateless: each POST carries JSON-RPC messages and gets their answers
 * as JSON; no session is kept, so any instance behind a load balancer can answer. The API key is checked
 * before the body is read (401, with `WWW-Authenticate` as on every door); each tool call is then admitted like a REST call.
 */
export function mcpRoute(services: Services): Middleware {
  return async (ctx, next) => {
    if (ctx.path !== MCP_PATH) return next();
    if (ctx.method !== 'POST')
      throw new ApiError(
        'method_not_allowed',
        `${ctx.method} is not allowed on ${MCP_PATH}: this MCP server is stateless; POST JSON-RPC messages to it`,
        { headers: { Allow: 'POST' } },
      );
    const requestId = ctx.state.requestId as string;
    const context = createRequestContext(services, { requestId, headers: ctx.req.headers, door: 'mcp' });
    ctx.state.apiContext = context;
    const principal = await authenticate(context);
    // JSON-RPC 2.0 answers an empty batch with Invalid Request; the SDK's transport finds no request in it
    // and answers 202, as for notifications. Said in the transport's own form for invalid requests.
    if (Array.isArray(ctx.request.body) && ctx.request.body.length === 0) {
      ctx.status = 400;
      ctx.body = {
        jsonrpc: '2.0',
        error: { code: ErrorCode.InvalidRequest, message: 'Invalid Request: Batch must not be empty' },
        id: null,
      };
      return;
    }

    const server = createMcpServer({
      services,
      headers: ctx.req.headers,
      principal,
      scopes: principal.scopes,
      orgId: principal.orgId,
      requestId,
    });
    // The web-standard transport on a Request of our own, its Response's bytes written by Koa: the SDK's
    // Node wrapper streams both ways through @hono/node-server instead. Nothing is closed afterwards: a
    // stateless server holds no timer or socket once it has answered, and closing it only built an error
    // (with its stack) per request for pending calls there were none of.
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    await server.connect(transport);
    const headers = new Headers();
    for (const [name, value] of Object.entries(ctx.req.headers))
      if (typeof value === 'string') headers.set(name, value);
    let request: Request;
    try {
      request = new Request(ctx.href, { method: 'POST', headers });
    } catch {
      throw new ApiError('invalid_request', `Host: not a valid host name (${JSON.stringify(ctx.host)})`);
    }
    const response = await transport.handleRequest(request, {
      parsedBody: ctx.request.body,
    });
    // The bytes as the transport encoded them (no decoding to a string to be encoded again), then the
    // status: Koa turns an empty body set after it into 204, and MCP wants notifications answered 202.
    ctx.body = response.body ? Buffer.from(await response.arrayBuffer()) : null;
    ctx.status = response.status;
    response.headers.forEach((value, name) => {
      ctx.set(name, value);
    });
  };
}
