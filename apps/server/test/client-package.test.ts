import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { access, copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, UUID } from './harness.ts';

/**
 * @crm/client as an app outside this repository gets it: packed (`npm pack`, which builds it), installed
 * from the tarball into a new project in the temporary folder, type-checked, compiled and run against a
 * live server on Node 24 and on Node 20 (client-app.ts is the app).
 */
const run = promisify(execFile);
const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const TSC = path.join(REPO, 'node_modules/typescript/bin/tsc');
const APP = fileURLToPath(new URL('./client-app.ts', import.meta.url));
// The app's own devDependencies, at the repository's versions (in npm's cache since `npm install`).
const APP_DEV_DEPENDENCIES = ['typescript', '@types/node'].map(
  (name) =>
    `${name}@${JSON.parse(readFileSync(path.join(REPO, 'node_modules', name, 'package.json'), 'utf8')).version}`,
);
/** What installing the tarball may bring besides the app's own: the client and what it runs on. */
const RUNTIME_PACKAGES = [
  '@crm/client',
  '@stablelib/base64',
  '@trpc/client',
  '@trpc/server',
  'fast-sha256',
  'openapi-fetch',
  'openapi-typescript-helpers',
  'standardwebhooks',
];

/** The system's Node 20, when this machine has one beside the repository's Node 24. */
async function node20(): Promise<string | undefined> {
  if (!existsSync('/usr/bin/node')) return undefined;
  const { stdout } = await run('/usr/bin/node', ['--version']);
  return stdout.startsWith('v20.') ? '/usr/bin/node' : undefined;
}

const nodeTsconfig = {
  compilerOptions: {
    strict: true,
    target: 'es2022',
    module: 'nodenext',
    moduleResolution: 'nodenext',
    outDir: 'out',
    types: ['node'],
    skipLibCheck: false,
  },
  files: ['src/app.ts'],
};
const bundlerTsconfig = {
  // The declarations were checked by the first configuration (skipLibCheck off): not again.
  compilerOptions: {
    ...nodeTsconfig.compilerOptions,
    module: 'esnext',
    moduleResolution: 'bundler',
    noEmit: true,
    skipLibCheck: true,
  },
  files: ['src/app.ts'],
};

describe('the packed client, installed in a project of its own', () => {
  let dir: string;
  let skipReason: string | undefined;
  let server: TestServer;
  let tarballFiles: string[] = [];
  const system20 = node20();

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'crm-client-app-'));
    const packed = await run('npm', ['pack', '-w', 'packages/client', '--pack-destination', dir, '--json'], {
      cwd: REPO,
      maxBuffer: 16 << 20,
    });
    const tarball = (await readdir(dir)).find((f) => f.endsWith('.tgz'));
    if (!tarball) throw new Error(`npm pack wrote no tarball: ${packed.stderr}`);
    const listing = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('\n[') + 1)) as Array<{
      files: Array<{ path: string }>;
    }>;
    tarballFiles = listing[0]?.files.map((f) => f.path) ?? [];
    await writeFile(
      path.join(dir, 'package.json'),
      JSON.stringify({ name: 'crm-client-app', private: true, type: 'module' }),
    );
    await writeFile(path.join(dir, 'tsconfig.json'), JSON.stringify(nodeTsconfig));
    await writeFile(path.join(dir, 'tsconfig.bundler.json'), JSON.stringify(bundlerTsconfig));
    await mkdir(path.join(dir, 'src'));
    await copyFile(APP, path.join(dir, 'src/app.ts'));
    const install = (mode: string) =>
      run('npm', ['install', mode, '--no-audit', '--no-fund', `./${tarball}`, ...APP_DEV_DEPENDENCIES], {
        cwd: dir,
      });
    // From npm's cache; what it lacks (a package's metadata, on a machine that installed from the lock)
    // once from the registry. Without either, nothing here can be checked: say so.
    await install('--offline').catch(async (err: { stderr?: string }) => {
      if (!err.stderr?.includes('ENOTCACHED')) throw err;
      await install('--prefer-offline').catch((again: { stderr?: string }) => {
        if (!/ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ENETUNREACH/.test(again.stderr ?? '')) throw again;
        skipReason = `the client's dependencies are neither in npm's cache nor reachable: ${again.stderr?.split('\n')[0]}`;
      });
    });
    if (skipReason) return;
    // The app, compiled under moduleResolution nodenext to out/app.js, which the runs below execute.
    await run(process.execPath, [TSC, '-p', 'tsconfig.json'], { cwd: dir });
    server = await startTestServer('pglite', {
      // One search a second, so that the app's second search is answered 429 and retried.
      CRM_RATE_LIMIT_WINDOW_SECONDS: '1',
      CRM_RATE_LIMIT_SEARCH: '1',
      CRM_WEBHOOKS_ALLOW_PRIVATE: 'true',
    });
  });

  afterAll(async () => {
    await server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('ships built JavaScript and declarations, and brings only what the client runs on', async (ctx) => {
    if (skipReason) return ctx.skip(skipReason);
    // The built files and the README: no TypeScript source, test or script of the repository.
    expect(tarballFiles).toEqual(
      expect.arrayContaining(['README.md', 'package.json', 'dist/index.js', 'dist/index.cjs']),
    );
    expect(
      tarballFiles.filter((f) => !/^(README\.md|package\.json|dist\/.+\.(js|cjs|d\.ts|d\.cts))$/.test(f)),
    ).toEqual([]);
    const installed = (await run('npm', ['ls', '--all', '--parseable'], { cwd: dir })).stdout
      .split('\n')
      .filter((line) => line.includes('node_modules'))
      .map((line) => line.slice(line.lastIndexOf('node_modules/') + 'node_modules/'.length));
    const own = ['typescript', '@types/node', 'undici-types'];
    expect(installed.filter((name) => !own.includes(name)).sort()).toEqual(RUNTIME_PACKAGES);
    // The router's types are in the package: no declaration names anything of the server's.
    const dist = path.join(dir, 'node_modules/@crm/client/dist');
    for (const file of tarballFiles.filter((f) => /\.d\.c?ts$/.test(f))) {
      const declarations = await readFile(path.join(dist, '..', file), 'utf8');
      expect(declarations, file).not.toMatch(
        /from ['"](@crm\/|@mikro-orm|kysely|koa|@langchain|langchain|zod)/,
      );
    }
  });

  it('type-checks under strict with moduleResolution nodenext and bundler, and refuses a wrong input', async (ctx) => {
    if (skipReason) return ctx.skip(skipReason);
    // nodenext compiled in beforeAll (it emits the app the runs execute); bundler only checks.
    await access(path.join(dir, 'out/app.js'));
    // Without its @ts-expect-error, the wrong input is a compile error naming the title (the types are
    // real), and the only error: the rest of the app type-checks under bundler too. One compiler run
    // instead of one with the directive and one without (each ~3 s of CPU).
    const app = await readFile(path.join(dir, 'src/app.ts'), 'utf8');
    expect(app).toContain('// @ts-expect-error');
    await writeFile(path.join(dir, 'src/app.ts'), app.replace(/^\s*\/\/ @ts-expect-error.*\n/m, ''));
    const failed = await run(process.execPath, [TSC, '-p', 'tsconfig.bundler.json'], { cwd: dir }).then(
      () => '',
      (err: { stdout: string }) => err.stdout,
    );
    await writeFile(path.join(dir, 'src/app.ts'), app);
    expect(failed.split('\n').filter((line) => /error TS\d+/.test(line))).toEqual([
      expect.stringMatching(
        /^src\/app\.ts\(\d+,\d+\): error TS2322: Type 'number' is not assignable to type 'string'/,
      ),
    ]);
  });

  it('loads with require() too (CJS)', async (ctx) => {
    if (skipReason) return ctx.skip(skipReason);
    const { stdout } = await run(
      process.execPath,
      [
        '-e',
        "const c = require('@crm/client'); console.log(typeof c.createCrmClient, typeof c.verifyWebhook)",
      ],
      { cwd: dir },
    );
    expect(stdout.trim()).toBe('function function');
  });

  async function runApp(node: string, runId: string) {
    const org = await server.newOrg(`App on ${runId}`);
    const { stdout } = await run(node, ['out/app.js'], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '', CRM_URL: server.url, CRM_API_KEY: org.apiKey, RUN_ID: runId },
    });
    const out = JSON.parse(stdout);
    expect(out.trpc).toMatchObject({
      title: `App deal ${runId}`,
      status: 200, // tRPC answers 200 where REST's create answers 201
      rateLimit: { group: 'crud', limit: 1_000_000 },
      apiQuota: { used: 1 },
    });
    expect(out.trpc.requestId).toMatch(UUID);
    expect(out.rest).toEqual({ title: `App deal ${runId}`, status: 200 });
    expect(out.error).toMatchObject({
      name: 'CrmError',
      status: 404,
      code: 'not_found',
      body: { error: 'Deal not found', code: 'not_found' },
    });
    expect(out.error.requestId).toMatch(UUID);
    expect(out.searchAttempts).toEqual([1, 2]);
    expect(out.replay).toEqual({ sameDeal: true, replayed: true });
    expect(out.allPages).toBe(2); // the two deals created before it
    expect([out.timeout, ...out.abort]).toEqual(['TimeoutError', 'AbortError', 'AbortError']);
    expect(out.webhook).toEqual({ type: 'deal.created', sameDeal: true });
    expect(out.forged).toBe('refused');
    // The creates without a key of their own got one from the client, so a retry could not create twice.
    const keys = await server.sql<{ key: string }>(
      'select key from idempotency_keys where api_key_id = ? order by created_at',
      [org.keyId],
    );
    expect(keys.map((k) => k.key.replace(/[0-9a-f]{32}$/, '…'))).toEqual([
      'crm-client-…',
      `app-${runId}`,
      'crm-client-…',
    ]);
  }

  it('runs on Node 24 against a live server: tRPC and REST calls, an error, a retried 429, a verified webhook', async (ctx) => {
    if (skipReason) return ctx.skip(skipReason);
    await runApp(process.execPath, 'node24');
  });

  it('runs on Node 20 the same way', async (ctx) => {
    if (skipReason) return ctx.skip(skipReason);
    const node = await system20;
    if (!node) return ctx.skip('no Node 20 at /usr/bin/node on this machine');
    await runApp(node, 'node20');
  });
});
