import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const NODE = process.execPath;

/**
 * Node's compile cache (vitest.config.ts sets NODE_COMPILE_CACHE), for a process a test starts with an
 * environment of its own: it changes nothing the process does, only what loading its modules costs (a
 * server process 0.7-0.9 s less CPU, a CLI one ~0.45 s). Without it only processes that inherited the
 * whole environment had it.
 */
export const COMPILE_CACHE: Record<string, string> = process.env.NODE_COMPILE_CACHE
  ? { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE }
  : {};

/**
 * Node's flags for a process a test starts, before its entry point: WebAssembly compiled by the baseline
 * compiler only. The embedded database is PGlite's WebAssembly, which V8 otherwise also recompiles with
 * its optimizing compiler as it runs hot: 0.3-0.6 s of CPU for a `crm` command that lives 1.5 s, CPU the
 * suite's other file waits on (the suite is CPU-bound on two cores). What the process does is the same.
 */
export const CHILD_NODE_FLAGS = ['--liftoff-only'];

export interface ServerProcess {
  child: ChildProcess;
  /** Where the API answers; undefined for a worker-only process. */
  url: string | undefined;
  /** Its stdout, one JSON log line per entry. */
  stdout: string[];
  stderr: () => string;
  /** The exit code, or the name of the signal that ended the process. */
  exited: Promise<number | string | null>;
}

/**
 * Starts `npm start`'s entry point as a user would, with `env` on top of a small base environment, and
 * resolves once it says it is up (the API's listening line, or the worker's started line).
 */
export async function spawnServer(env: Record<string, string>): Promise<ServerProcess> {
  const child = spawn(NODE, [...CHILD_NODE_FLAGS, 'apps/server/src/main.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      ...COMPILE_CACHE,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stdout: string[] = [];
  let stderr = '';
  child.stderr?.on('data', (d) => {
    stderr += String(d);
  });
  const exited = new Promise<number | string | null>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal)),
  );
  const url = await new Promise<string | undefined>((resolve, reject) => {
    let buffer = '';
    child.stdout?.on('data', (d) => {
      buffer += String(d);
      const lines = buffer.split('\n');
      buffer = lines.pop() ?? '';
      for (const line of lines) {
        stdout.push(line);
        const parsed = JSON.parse(line) as { url?: string; msg?: string };
        if (parsed.url) resolve(parsed.url);
        if (parsed.msg === 'webhook worker started') resolve(undefined);
      }
    });
    exited.then((code) => reject(new Error(`server exited with ${code}: ${stderr}`)));
  });
  return { child, url, stdout, stderr: () => stderr, exited };
}

/**
 * The API key a first start printed on stderr. The log line spawnServer waits for comes on stdout, a pipe of
 * its own, so it can arrive before the key written just before it: wait for the key too.
 */
export async function firstKeyOf(p: ServerProcess, timeoutMs = 10_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const key = /ck_[A-Za-z0-9_-]{32}/.exec(p.stderr())?.[0];
    if (key) return key;
    if (Date.now() > deadline) throw new Error(`no API key on stderr within ${timeoutMs} ms: ${p.stderr()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Stops a process with `signal` (if it still runs) and waits for it to exit. */
export async function stopProcess(p: ServerProcess | undefined, signal: NodeJS.Signals = 'SIGTERM') {
  if (!p) return undefined;
  if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill(signal);
  return p.exited;
}
