import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/** An MCP client of the official SDK, connected over Streamable HTTP to `url`'s /mcp with `apiKey`. */
export async function mcpClient(url: string, apiKey: string): Promise<Client> {
  const client = new Client({ name: 'crm-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL('/mcp', url), {
      requestInit: { headers: { Authorization: `Bearer ${apiKey}` } },
    }),
  );
  return client;
}
