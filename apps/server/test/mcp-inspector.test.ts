import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { TOOLS } from '@crm/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './harness.ts';
import { COMPILE_CACHE } from './server-process.ts';

/**
 * The MCP Inspector's CLI (`@modelcontextprotocol/inspector`), a client nobody here wrote, run as a user
 * would: one process per call, its JSON on stdout.
 */
const require = createRequire(import.meta.url);
const INSPECTOR = path.join(
  path.dirname(require.resolve('@modelcontextprotocol/inspector/package.json')),
  'clients/launcher/build/index.js',
);
const CLI_MAIN = fileURLToPath(new URL('../../cli/src/main.ts', import.meta.url));

async function inspector(...args: string[]): Promise<Record<string, unknown>> {
  const { stdout } = await promisify(execFile)(process.execPath, [INSPECTOR, '--cli', ...args], {
    timeout: 60_000,
    // Its catalog file goes to a scratch home, not the user's.
    env: { ...process.env, HOME: path.join(process.env.TMPDIR ?? '/tmp', 'crm-inspector-home') },
  });
  return JSON.parse(stdout) as Record<string, unknown>;
}

// A client nobody here wrote, speaking to the server's /mcp and to `crm mcp`: what it proves is the protocol
// as that client speaks it, which does not follow the database. Run once, on the embedded database (it
// took 13.6 s of CPU for the two, an Inspector process per call); the MCP server's answers on both databases
// are mcp.test.ts's, and `crm mcp` passing on to a server is mcp-stdio.test.ts's.
describe('the MCP Inspector CLI against the server on embedded PGlite', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer('pglite');
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('over Streamable HTTP: lists the tools and calls one', async () => {
    const auth = `Authorization: Bearer ${s.orgA.apiKey}`;
    const listed = (await inspector(`${s.url}/mcp`, '--header', auth, '--method', 'tools/list')) as {
      tools: Array<{ name: string }>;
    };
    expect(listed.tools.map((t) => t.name)).toEqual(TOOLS.map((t) => t.name));
    const created = (await inspector(
      `${s.url}/mcp`,
      '--header',
      auth,
      '--method',
      'tools/call',
      '--tool-name',
      'deals-create',
      '--tool-arg',
      'title=Inspected',
      'value=5000',
    )) as { structuredContent: { data: { id: string; value: number } } };
    expect(created.structuredContent.data.value).toBe(5000);
    const rest = await s.api(`/deals/${created.structuredContent.data.id}`);
    expect(rest.body.data.deal.title).toBe('Inspected');
  });

  it('over stdio (crm mcp, passed on with CRM_URL): reads a prompt and a resource', async () => {
    const stdio = [
      process.execPath,
      CLI_MAIN,
      'mcp',
      '-e',
      `CRM_URL=${s.url}`,
      '-e',
      `CRM_API_KEY=${s.orgA.apiKey}`,
      // The Inspector starts it with a default environment and these: the compile cache too.
      ...Object.entries(COMPILE_CACHE).flatMap(([name, value]) => ['-e', `${name}=${value}`]),
    ];
    const prompt = (await inspector(
      ...stdio,
      '--method',
      'prompts/get',
      '--prompt-name',
      'pipeline-review',
    )) as { messages: Array<{ content: { text: string } }> };
    expect(prompt.messages[0]?.content.text).toMatch(/pipeline-health/);
    const stages = (await inspector(
      ...stdio,
      '--method',
      'resources/read',
      '--uri',
      'crm://pipeline/stages',
    )) as {
      contents: Array<{ text: string }>;
    };
    expect(JSON.parse(stages.contents[0]?.text ?? '{}')).toEqual((await s.api('/pipeline/stages')).body);
  });
});
