import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DataDirLockedError, lockSocketPath, openDatabase } from '../src/index.ts';

/** A new database here starts from the suite's migrated image (its global setup's), not a new cluster. */
const image = new Blob([readFileSync(inject('embeddedImage'))]);

/** Opens the database in another process, as a server does, and kills it with SIGKILL once it holds it. */
async function killHolder(dataDir: string): Promise<void> {
  const script = `import('@crm/db').then((db) => db.openDatabase({ kind: 'pglite', dataDir: ${JSON.stringify(dataDir)} }, 'server')).then(() => console.log('up'))`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    cwd: path.dirname(fileURLToPath(import.meta.url)),
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`the holder exited with ${code}`)));
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

describe('the embedded data directory lock', () => {
  let dataDir: string;
  beforeAll(() => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'crm-lock-'));
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('a second opener is refused with a message naming the holder, and can open once it is closed', async () => {
    const first = await openDatabase({ kind: 'pglite', dataDir, image }, 'server');
    try {
      const second = openDatabase({ kind: 'pglite', dataDir }, 'cli');
      await expect(second).rejects.toBeInstanceOf(DataDirLockedError);
      await expect(second).rejects.toThrow(new RegExp(`in use by the server \\(pid ${process.pid}, since `));
    } finally {
      await first.close();
    }
    const again = await openDatabase({ kind: 'pglite', dataDir }, 'cli');
    await again.close();
  });

  it('a lock left by a killed holder whose pid is alive again (a container restarted as pid 1) is taken over at once', async () => {
    await killHolder(dataDir);
    // The dead holder's pid is this very process's: a pid check would call it alive.
    const holderFile = path.join(dataDir, 'pglite.holder.json');
    expect(existsSync(holderFile)).toBe(true);
    writeFileSync(
      holderFile,
      JSON.stringify({ pid: process.pid, role: 'server', since: new Date().toISOString() }),
    );
    const started = Date.now();
    const db = await openDatabase({ kind: 'pglite', dataDir }, 'server');
    expect(Date.now() - started).toBeLessThan(10_000);
    await db.close();
  });

  it('a connection left open on the lock (a suspended crm) does not hold up closing the database', async () => {
    const db = await openDatabase({ kind: 'pglite', dataDir }, 'server');
    const idle = connect(lockSocketPath(dataDir));
    await new Promise((resolve) => idle.once('connect', resolve));
    const started = Date.now();
    await db.close();
    expect(Date.now() - started).toBeLessThan(5_000);
    idle.destroy();
  });

  it('a data directory too deep for a socket path beside it still gets one lock', async () => {
    const deep = path.join(dataDir, 'a-rather-long-folder-name-for-this-test'.repeat(3));
    expect(Buffer.byteLength(path.join(deep, 'pglite.lock.sock'))).toBeGreaterThan(107);
    const first = await openDatabase({ kind: 'pglite', dataDir: deep, image }, 'server');
    try {
      await expect(openDatabase({ kind: 'pglite', dataDir: deep }, 'cli')).rejects.toBeInstanceOf(
        DataDirLockedError,
      );
    } finally {
      await first.close();
    }
  });
});
