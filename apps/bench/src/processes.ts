import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

export interface Child {
  name: string;
  pid: number;
  url: string;
  /** The last lines the child wrote, for error messages. */
  output(): string;
  /** SIGTERM, then SIGKILL after a grace period; resolves once the process has exited. */
  stop(): Promise<void>;
}

/** Every child this process started and has not seen exit: the Ctrl+C handler kills these, by pid. */
const live = new Map<number, ChildProcess>();

export function liveChildren(): number[] {
  return [...live.keys()];
}

/** Last resort when the bench itself exits abruptly: no orphaned servers holding a data dir or port. */
process.on('exit', () => {
  for (const pid of live.keys()) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function exited(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => proc.once('exit', () => resolve()));
}

/**
 * The service with every limit out of the way, as each bench starts it: each request does its full work,
 * the limiter's and the quotas' counting included, instead of being answered 429; one instance, its
 * counters in memory (REDIS_URL unset), no bootstrap organization, warnings only in its log.
 */
export const UNTHROTTLED: Readonly<Record<string, string>> = {
  CRM_RATE_LIMIT_CRUD: '1000000000',
  CRM_RATE_LIMIT_SEARCH: '1000000000',
  CRM_RATE_LIMIT_AI: '1000000000',
  CRM_RATE_LIMIT_DEFAULT: '1000000000',
  CRM_API_QUOTA_MONTHLY: '1000000000000',
  CRM_AI_QUOTA_MONTHLY: '1000000000000',
  REDIS_URL: '',
  LOG_LEVEL: 'warn',
  CRM_BOOTSTRAP_ORG: 'false',
};

/**
 * Starts `node <script>` with the given environment on a free port of 127.0.0.1 and waits until
 * GET /readyz answers 200 (or the child dies, or the timeout passes).
 */
export async function startServerProcess(
  name: string,
  script: string,
  env: Record<string, string>,
  timeoutMs = 120_000,
): Promise<Child> {
  const port = await freePort();
  const proc = spawn(process.execPath, [script], {
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const pid = proc.pid;
  if (pid === undefined) throw new Error(`${name}: could not start ${script}`);
  live.set(pid, proc);
  proc.once('exit', () => live.delete(pid));

  const lines: string[] = [];
  const keep = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (line.trim() === '') continue;
      lines.push(line.length > 500 ? `${line.slice(0, 500)}…` : line);
      if (lines.length > 40) lines.shift();
    }
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);

  const url = `http://127.0.0.1:${port}`;
  const child: Child = {
    name,
    pid,
    url,
    output: () => lines.join('\n'),
    async stop() {
      if (!live.has(pid)) return;
      proc.kill('SIGTERM');
      const timer = setTimeout(() => {
        if (live.has(pid)) proc.kill('SIGKILL');
      }, 15_000);
      await exited(proc);
      clearTimeout(timer);
    },
  };

  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!live.has(pid)) throw new Error(`${name} exited before it was ready:\n${child.output()}`);
    try {
      const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) });
      await res.body?.cancel();
      if (res.status === 200) return child;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 150));
  }
  await child.stop();
  throw new Error(`${name} was not ready after ${timeoutMs / 1000} s:\n${child.output()}`);
}

export interface Memory {
  /** Resident set size now, in MiB. */
  rssMb: number;
  /** Peak resident set size (VmHWM), in MiB. */
  peakMb: number;
}

/** VmRSS and VmHWM from /proc/<pid>/status; undefined where /proc is not available. */
export function memoryOf(pid: number): Memory | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) =>
      Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
    return { rssMb: kb('VmRSS') / 1024, peakMb: kb('VmHWM') / 1024 };
  } catch {
    return undefined;
  }
}

/** Clock ticks per second of /proc/<pid>/stat's CPU times (100 on every Linux we run on; asked once). */
let clockTicks: number | undefined;
function ticksPerSecond(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/**
 * CPU time (user + system) the process has used so far, in ms; undefined where /proc is not available.
 * On a shared machine this is steadier than throughput: it counts the server's own work, not its waits.
 */
export function cpuMsOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name; utime and stime are the 14th and 15th of the line.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? (ticks / ticksPerSecond()) * 1000 : undefined;
  } catch {
    return undefined;
  }
}
