import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { TOOLS } from '@crm/api';
import { openDatabase } from '@crm/db';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createDatabase,
  migratedDataDir,
  startTestServer,
  type TestServer,
} from '../../server/test/harness.ts';
import { sharedSchemaValidator } from '../../server/test/mcp-client.ts';
import { CHILD_NODE_FLAGS, COMPILE_CACHE } from '../../server/test/server-process.ts';
import { crmProcess } from './cli-process.ts';
import { crm } from './crm.ts';

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL;

/** `npm run --silent crm -- mcp` as a desktop agent starts it: a child process spoken to on stdio. */
async function stdioClient(env: Record<string, string>): Promise<Client> {
  const client = new Client(
    { name: 'crm-stdio-test', version: '1.0.0' },
    { jsonSchemaValidator: sharedSchemaValidator },
  );
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [...CHILD_NODE_FLAGS, MAIN, 'mcp'],
      env: { ...getDefaultEnvironment(), ...COMPILE_CACHE, LOG_LEVEL: 'silent', ...env },
      stderr: 'pipe',
    }),
  );
  return client;
}

const dataOf = (result: CallToolResult) =>
  (result.structuredContent as { data: Record<string, unknown> }).data;

/** Creates a deal, lists and reads it back, all through the stdio server's tools. */
async function roundTrip(client: Client) {
  const { tools } = await client.listTools();
  expect(tools.map((t) => t.name)).toEqual(TOOLS.map((t) => t.name));
  const created = (await client.callTool({
    name: 'deals-create',
    arguments: { title: 'Over stdio', value: 300 },
  })) as CallToolResult;
  expect(created.isError).toBeFalsy();
  const id = dataOf(created).id as string;
  const got = (await client.callTool({ name: 'deals-get', arguments: { id } })) as CallToolResult;
  expect(dataOf(got)).toMatchObject({
    deal: { id, title: 'Over stdio', value: 300 },
    recent_activities: [expect.objectContaining({ type: 'deal_created' })],
  });
  const bad = (await client.callTool({ name: 'deals-create', arguments: { title: 7 } })) as CallToolResult;
  expect(bad.isError).toBe(true);
  expect(JSON.stringify(bad.content)).toMatch(/title: expected string, got number/);
  return id;
}

/** `crm mcp` fed `lines` at once and its stdin closed, as a script piping a file does. */
async function piped(env: Record<string, string>, lines: unknown[]) {
  const { code, stdout, stderr } = await crmProcess(['mcp'], {
    env: { ...getDefaultEnvironment(), ...env },
    input: lines.map((l) => `${JSON.stringify(l)}\n`).join(''),
  });
  const answers = stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { id?: number; result?: unknown; error?: unknown });
  return { code, answers, stderr };
}

const SESSION = [
  {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'script', version: '1' } },
  },
  { jsonrpc: '2.0', method: 'notifications/initialized' },
  { jsonrpc: '2.0', id: 2, method: 'tools/list' },
  ...[3, 4, 5].map((id) => ({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'deals-create', arguments: { title: `Piped ${id}` } },
  })),
];

describe('crm mcp (stdio)', () => {
  it('on the embedded database: the same tools, writes that persist, and a wrong key refused', async () => {
    const dir = migratedDataDir('crm-mcp-');
    const env = { CRM_DATA_DIR: dir };
    try {
      const org = (await crm(env, 'org', 'create', 'Stdio org')).lines[0] as { api_key: string };
      const client = await stdioClient({ ...env, CRM_API_KEY: org.api_key });
      let id: string;
      try {
        id = await roundTrip(client);
      } finally {
        await client.close();
      }
      // A new session on the same database sees what the first one wrote.
      const again = await stdioClient({ ...env, CRM_API_KEY: org.api_key });
      try {
        const got = (await again.callTool({ name: 'deals-get', arguments: { id } })) as CallToolResult;
        expect(got.isError).toBeFalsy();
      } finally {
        await again.close();
      }
      // A wrong key is said once on stderr, and the process ends with 1 (this database is already made,
      // so the refusal costs an open, not a new cluster).
      const child = spawn(process.execPath, [...CHILD_NODE_FLAGS, MAIN, 'mcp'], {
        env: {
          ...getDefaultEnvironment(),
          ...COMPILE_CACHE,
          ...env,
          CRM_API_KEY: 'ck_wrongwrongwrongwrongwrongwrongwr',
        },
      });
      let stderr = '';
      child.stderr.on('data', (chunk) => {
        stderr += chunk;
      });
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      expect(code).toBe(1);
      expect(stderr).toMatch(/error: Invalid or revoked API key/);
      expect(stderr.match(/Invalid or revoked API key/g)).toHaveLength(1);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('an embedded database a crm command holds is said to be in use, not taken for a server', async () => {
    const dir = migratedDataDir('crm-mcp-held-');
    const holder = await openDatabase({ kind: 'pglite', dataDir: dir }, 'cli');
    try {
      const { code, stderr } = await piped(
        { CRM_DATA_DIR: dir, CRM_API_KEY: 'ck_anyanyanyanyanyanyanyanyanyanyan' },
        SESSION,
      );
      expect(code).toBe(1);
      expect(stderr).toMatch(/^error: The embedded database at .+ is in use by the cli \(pid \d+/);
      expect(stderr).not.toMatch(/passing MCP on|fetch failed/);
    } finally {
      await holder.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it.skipIf(!TEST_DATABASE_URL)(
    `on PostgreSQL${TEST_DATABASE_URL ? '' : ' (skipped: TEST_DATABASE_URL is not set)'}`,
    async () => {
      const db = await createDatabase(TEST_DATABASE_URL as string);
      const env = { DATABASE_URL: db.url };
      try {
        const org = (await crm(env, 'org', 'create', 'Stdio org')).lines[0] as { api_key: string };
        const client = await stdioClient({ ...env, CRM_API_KEY: org.api_key });
        try {
          await roundTrip(client);
        } finally {
          await client.close();
        }
      } finally {
        await db.drop();
      }
    },
  );

  describe('with CRM_URL: passed on to a server’s /mcp', () => {
    let s: TestServer;
    beforeAll(async () => {
      s = await startTestServer('pglite');
    });
    afterAll(async () => {
      await s?.stop();
    });

    it('the same tools and answers as the server’s own MCP and REST', async () => {
      const client = await stdioClient({ CRM_URL: s.url, CRM_API_KEY: s.orgA.apiKey });
      try {
        const id = await roundTrip(client);
        const got = (await client.callTool({ name: 'deals-get', arguments: { id } })) as CallToolResult;
        expect(got.structuredContent).toEqual((await s.api(`/deals/${id}`)).body);
        const prompts = await client.listPrompts();
        expect(prompts.prompts).toHaveLength(3);
      } finally {
        await client.close();
      }
    });

    it('a session piped from a file gets every answer, though stdin closes while they are under way', async () => {
      const malformed = {
        jsonrpc: '2.0',
        id: 6,
        method: 'tools/call',
        params: { name: 'deals-get', arguments: null },
      };
      const { code, answers } = await piped({ CRM_URL: s.url, CRM_API_KEY: s.orgA.apiKey }, [
        ...SESSION,
        malformed,
      ]);
      expect(code).toBe(0);
      expect(answers.map((a) => a.id).sort()).toEqual([1, 2, 3, 4, 5, 6]);
      expect(answers.filter((a) => a.id !== 6).every((a) => a.result && !a.error)).toBe(true);
      // The relay answers a malformed call as the server would: -32602 naming the field.
      expect(answers.find((a) => a.id === 6)?.error).toMatchObject({
        code: -32602,
        message: expect.stringMatching(/params\.arguments: expected record, got null$/),
      });
      for (const id of [3, 4, 5])
        expect(await s.sql('select id from deals where title = ?', [`Piped ${id}`])).toHaveLength(1);
    });

    it('a wrong key, or no server at CRM_URL, is said once on stderr without a stack (exit 1)', async () => {
      const wrong = await piped(
        { CRM_URL: s.url, CRM_API_KEY: 'ck_wrongwrongwrongwrongwrongwrongwr' },
        SESSION,
      );
      expect(wrong.code).toBe(1);
      expect(wrong.stderr).toMatch(
        /^error: the server at http:\/\/127\.0\.0\.1:\d+ refused CRM_API_KEY: Invalid or revoked API key\n$/,
      );
      const nobody = await piped({ CRM_URL: 'http://127.0.0.1:9', CRM_API_KEY: s.orgA.apiKey }, SESSION);
      expect(nobody.code).toBe(1);
      expect(nobody.stderr).toMatch(/^error: no server answers at http:\/\/127\.0\.0\.1:9 \(.+\)\n$/);
    });
  });
});
