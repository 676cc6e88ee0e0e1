import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { migratedDataDir } from './harness.ts';
import { type ServerProcess, spawnServer, stopProcess } from './server-process.ts';

const SHUTDOWN_TIMEOUT_MS = 3_000;

/** How the process ended after `signal`, and how long after it; 'still running' past the timeout and a second. */
async function endOf(p: ServerProcess, signal: NodeJS.Signals = 'SIGTERM') {
  const started = Date.now();
  p.child.kill(signal);
  const exit = await Promise.race([
    p.exited,
    new Promise<string>((r) => setTimeout(() => r('still running'), SHUTDOWN_TIMEOUT_MS + 1_000)),
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
});
