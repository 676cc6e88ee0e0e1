import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { createDatabase, migratedDataDir } from './harness.ts';
import { type ServerProcess, spawnServer, stopProcess } from './server-process.ts';
import { type HangingProxy, startHangingProxy } from './tcp-proxy.ts';

const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL;
const SHUTDOWN_TIMEOUT_MS = 3_000;

/** How the process ended after `signal`, and how long after it; 'still running' past the timeout and 2 s. */
async function endOf(p: ServerProcess, signal: NodeJS.Signals = 'SIGTERM') {
  const started = Date.now();
  p.child.kill(signal);
  const exit = await Promise.race([
    p.exited,
    new Promise<string>((r) => setTimeout(() => r('still running'), SHUTDOWN_TIMEOUT_MS + 2_000)),
  ]);
  return { exit, ms: Date.now() - started };
}

describe('SIGTERM ends the server within CRM_SHUTDOWN_TIMEOUT_MS whatever happens', () => {
  let server: ServerProcess | undefined;
  let dataDir: string | undefined;
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    await stopProcess(server, 'SIGKILL');
    server = undefined;
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    dataDir = undefined;
  });

  const embedded = async () => {
    dataDir = migratedDataDir('crm-shutdown-');
    return spawnServer({
      CRM_DATA_DIR: dataDir,
      CRM_BOOTSTRAP_ORG: 'false',
      CRM_SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
    });
  };

  it('with nobody reading its log any more (`npm start | head`): stops cleanly, exit 0', async () => {
    server = await embedded();
    // The reader of its stdout goes away, as `head` does once it has its lines.
    server.child.stdout?.destroy();
    const { exit, ms } = await endOf(server);
    expect(exit, server.stderr()).toBe(0);
    expect(ms).toBeLessThan(SHUTDOWN_TIMEOUT_MS);
  });

  it('with nobody reading its log, goes on answering, then stops cleanly on SIGTERM', async () => {
    server = await embedded();
    server.child.stdout?.destroy();
    // Each request logs a line nobody reads.
    for (let i = 0; i < 20; i++) expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    const { exit } = await endOf(server);
    expect(exit, server.stderr()).toBe(0);
    expect(server.stderr()).not.toMatch(/EPIPE|Error/);
  });

  it.skipIf(!TEST_DATABASE_URL)(
    `with its PostgreSQL no longer answering: exits 1 at the timeout, saying so${TEST_DATABASE_URL ? '' : ' (skipped: TEST_DATABASE_URL is not set)'}`,
    async () => {
      const created = await createDatabase(TEST_DATABASE_URL as string);
      cleanups.push(created.drop);
      const url = new URL(created.url);
      const proxy: HangingProxy = await startHangingProxy({
        host: url.hostname,
        port: Number(url.port || 5432),
      });
      cleanups.push(async () => {
        proxy.resume();
        await proxy.close();
      });
      url.host = `127.0.0.1:${proxy.port}`;
      server = await spawnServer({
        DATABASE_URL: url.toString(),
        CRM_BOOTSTRAP_ORG: 'false',
        CRM_SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
      });
      proxy.hang();
      // The webhook worker's next pass, and the usage counts stored at shutdown, now wait on it.
      await new Promise((r) => setTimeout(r, 1_000));
      const { exit, ms } = await endOf(server);
      expect(exit, server.stderr()).toBe(1);
      // (and a second for the process to end, and this test to see it, on a busy machine)
      expect(ms).toBeLessThan(SHUTDOWN_TIMEOUT_MS + 1_000);
      // Its last lines, read to the end of its stdout.
      const stdout = server.child.stdout;
      if (stdout && !stdout.closed) await new Promise((r) => stdout.once('close', r));
      const said = server.stdout.map((line) => (JSON.parse(line) as { msg: string }).msg);
      expect(said).toContain(
        `shutdown did not finish within CRM_SHUTDOWN_TIMEOUT_MS (${SHUTDOWN_TIMEOUT_MS} ms): exiting`,
      );
    },
  );
});
