import {
  authenticate,
  CliError,
  createMcpServer,
  createRequestContext,
  createServices,
  type Io,
  type Log,
  MCP_SERVER_INFO,
  onRequest,
  report,
} from '@crm/api';
import { loadConfig } from '@crm/config';
import { DataDirLockedError, openDatabase } from '@crm/db';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  CallToolResultSchema,
  GetPromptRequestSchema,
  GetPromptResultSchema,
  ListPromptsRequestSchema,
  ListPromptsResultSchema,
  ListResourcesRequestSchema,
  ListResourcesResultSchema,
  ListResourceTemplatesRequestSchema,
  ListResourceTemplatesResultSchema,
  ListToolsRequestSchema,
  ListToolsResultSchema,
  ReadResourceRequestSchema,
  ReadResourceResultSchema,
} from '@modelcontextprotocol/sdk/types.js';

/** stdout is the protocol's: everything else, log lines included, goes to stderr. */
function stderrLog(io: Io): Log {
  const line = (level: string) => (obj: object, msg: string) => {
    const { err, ...rest } = obj as { err?: unknown };
    io.stderr(
      JSON.stringify({ level, msg, ...rest, ...(err ? { err: (err as Error).message ?? String(err) } : {}) }),
    );
  };
  return { info: line('info'), warn: line('warn'), error: line('error') };
}

/** Resolves when the agent closes our stdin: the end of the session. */
const stdinClosed = () =>
  new Promise<void>((resolve) => process.stdin.once('close', resolve).once('end', resolve));

type Message = { id?: string | number; method?: string };

/**
 * Serves `server` on stdio until the agent closes stdin and every request it sent has been answered: an
 * agent (or a script) may send its last requests and close stdin at once, and closing then lost the
 * answers still under way (a relayed session piped from a file answered only its first request).
 */
async function serveOnStdio(server: Server): Promise<void> {
  const transport = new StdioServerTransport();
  await server.connect(transport);
  const pending = new Set<string | number>();
  let drained = () => {};
  const receive = transport.onmessage;
  transport.onmessage = (message) => {
    const m = message as Message;
    if (m.id !== undefined && m.method !== undefined) pending.add(m.id);
    receive?.(message);
  };
  const send = transport.send.bind(transport);
  transport.send = async (message) => {
    await send(message);
    const m = message as Message;
    if (m.id !== undefined && m.method === undefined && pending.delete(m.id) && pending.size === 0) drained();
  };
  await stdinClosed();
  if (pending.size > 0) await new Promise<void>((resolve) => (drained = resolve));
  await server.close();
}

/** What went wrong reaching a server's /mcp, said once and plainly (the SDK's errors carry a stack). */
function bridgeError(err: unknown, url: URL): Error {
  const status = (err as { code?: unknown }).code;
  if (status === 401 || status === 403)
    return new CliError(`the server at ${url.origin} refused CRM_API_KEY: Invalid or revoked API key`);
  if (err instanceof TypeError && /fetch failed/.test(err.message))
    return new CliError(
      `no server answers at ${url.origin} (${(err.cause as Error)?.message ?? err.message})`,
    );
  return err instanceof Error ? err : new Error(String(err));
}

/**
 * Serves a remote server's /mcp on stdio: every request is passed on over Streamable HTTP with the key,
 * so a desktop agent that only speaks stdio reaches a server elsewhere (or the one holding the embedded
 * database) through the same tools.
 */
async function bridge(url: URL, apiKey: string): Promise<void> {
  const client = new Client({ name: `${MCP_SERVER_INFO.name}-stdio`, version: MCP_SERVER_INFO.version });
  try {
    await client.connect(
      new StreamableHTTPClientTransport(url, {
        requestInit: { headers: { Authorization: `Bearer ${apiKey}` } },
      }),
    );
  } catch (err) {
    throw bridgeError(err, url);
  }
  const server = new Server(MCP_SERVER_INFO, {
    capabilities: client.getServerCapabilities() ?? {},
    instructions: client.getInstructions(),
  });
  const pass =
    <R>(schema: R) =>
    (request: { method: string; params?: unknown }) =>
      client.request(request as never, schema as never);
  onRequest(server, ListToolsRequestSchema, pass(ListToolsResultSchema));
  onRequest(server, CallToolRequestSchema, pass(CallToolResultSchema));
  onRequest(server, ListResourcesRequestSchema, pass(ListResourcesResultSchema));
  onRequest(server, ListResourceTemplatesRequestSchema, pass(ListResourceTemplatesResultSchema));
  onRequest(server, ReadResourceRequestSchema, pass(ReadResourceResultSchema));
  onRequest(server, ListPromptsRequestSchema, pass(ListPromptsResultSchema));
  onRequest(server, GetPromptRequestSchema, pass(GetPromptResultSchema));
  await serveOnStdio(server);
  await client.close();
}

/**
 * `crm mcp`: MCP over stdio for desktop agents, acting with `CRM_API_KEY`. With `CRM_URL` it passes
 * everything to that server's /mcp; otherwise it opens the configured database itself (or, when a server
 * on this machine holds the embedded one, passes everything to that server on PORT).
 */
export async function serveMcpOverStdio(env: Record<string, string | undefined>, io: Io): Promise<number> {
  const apiKey = env.CRM_API_KEY;
  if (!apiKey) {
    io.stderr('error: set CRM_API_KEY to the API key the agent acts with (and CRM_URL for a remote server)');
    return 2;
  }
  try {
    if (env.CRM_URL) {
      await bridge(new URL('/mcp', env.CRM_URL), apiKey);
      return 0;
    }
    const config = loadConfig(env);
    let db: Awaited<ReturnType<typeof openDatabase>>;
    try {
      db = await openDatabase(config.database, 'MCP server');
    } catch (err) {
      // Only a server answers MCP on its port: a `crm` command holding the database is waited for.
      if (!(err instanceof DataDirLockedError) || err.holder?.role !== 'server') throw err;
      io.stderr(
        `note: a server holds the embedded database; passing MCP on to it at 127.0.0.1:${config.port}`,
      );
      await bridge(new URL(`http://127.0.0.1:${config.port}/mcp`), apiKey);
      return 0;
    }
    const log = stderrLog(io);
    const services = await createServices(db.orm, config, log);
    try {
      const headers = { authorization: `Bearer ${apiKey}` };
      // A wrong key is said once, at start, rather than as an error of every call.
      const { scopes, orgId } = await authenticate(
        createRequestContext(services, { requestId: 'mcp-stdio', headers, door: 'mcp' }),
      );
      const server = createMcpServer({
        services,
        headers,
        scopes,
        orgId,
        requestId: `mcp-stdio-${process.pid}`,
      });
      await serveOnStdio(server);
    } finally {
      await services.limits.close();
      await db.close();
    }
    return 0;
  } catch (err) {
    return report(err, io);
  }
}
