import { ApiError, authenticate, createMcpServer, createRequestContext, type Services } from '@crm/api';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Middleware } from 'koa';
import type { Logger } from './logger.ts';

export const MCP_PATH = '/mcp';

/** RFC 6750's challenge: the key is a bearer token, and what was wrong with the one sent. */
const challenge = (code: string) =>
  code === 'missing_api_key'
    ? 'Bearer realm="crm"'
    : 'Bearer realm="crm", error="invalid_token", error_description="Invalid or revoked API key"';

/**
 * MCP over Streamable HTTP at /mcp, stateless: each POST carries JSON-RPC messages and gets their answers
 * as JSON; no session is kept, so any instance behind a load balancer can answer. The API key is checked
 * before the body is read (401 with `WWW-Authenticate`); each tool call is then admitted like a REST call.
 */
export function mcpRoute(services: Services, logger: Logger): Middleware {
  return async (ctx, next) => {
    if (ctx.path !== MCP_PATH) return next();
    if (ctx.method !== 'POST')
      throw new ApiError(
        'method_not_allowed',
        `${ctx.method} is not allowed on ${MCP_PATH}: this MCP server is stateless; POST JSON-RPC messages to it`,
        { headers: { Allow: 'POST' } },
      );
    const requestId = ctx.state.requestId as string;
    const context = createRequestContext(services, { requestId, headers: ctx.req.headers });
    ctx.state.apiContext = context;
    let principal: Awaited<ReturnType<typeof authenticate>>;
    try {
      principal = await authenticate(context);
    } catch (err) {
      if (err instanceof ApiError && err.status === 401)
        throw new ApiError(err.code, err.message, { headers: { 'WWW-Authenticate': challenge(err.code) } });
      throw err;
    }

    const server = createMcpServer({
      services,
      headers: ctx.req.headers,
      principal,
      requestId,
      onFailure: (err) => logger.error({ req_id: requestId, err }, 'MCP tool call failed'),
    });
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    ctx.respond = false;
    ctx.res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(ctx.req, ctx.res, ctx.request.body);
  };
}
