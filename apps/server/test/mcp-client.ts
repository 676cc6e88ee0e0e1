import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { JsonSchemaValidator, jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';

const ajv = new AjvJsonSchemaValidator();
const compiled = new Map<string, JsonSchemaValidator<unknown>>();

/**
 * One validator of tools' output schemas for every MCP client of the tests, each schema compiled once by
 * its text: a client compiles every tool's output schema when it lists the tools (the SDK's default, one
 * Ajv a client, ~0.4 s of CPU each), and the tests make dozens of clients of the same tools.
 */
export const sharedSchemaValidator: jsonSchemaValidator = {
  getValidator<T>(schema: Parameters<jsonSchemaValidator['getValidator']>[0]) {
    const key = JSON.stringify(schema);
    let validator = compiled.get(key);
    if (!validator) {
      validator = ajv.getValidator(schema);
      compiled.set(key, validator);
    }
    return validator as JsonSchemaValidator<T>;
  },
};

/** An MCP client of the official SDK, connected over Streamable HTTP to `url`'s /mcp with `apiKey`. */
export async function mcpClient(url: string, apiKey: string): Promise<Client> {
  const client = new Client(
    { name: 'crm-test', version: '1.0.0' },
    { jsonSchemaValidator: sharedSchemaValidator },
  );
  await client.connect(
    new StreamableHTTPClientTransport(new URL('/mcp', url), {
      requestInit: { headers: { Authorization: `Bearer ${apiKey}` } },
    }),
  );
  return client;
}
