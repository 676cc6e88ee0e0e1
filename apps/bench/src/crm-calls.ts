import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { API } from './load.ts';
import { cpuMsOf } from './processes.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const CLI = path.join(ROOT, 'apps/cli/src/main.ts');
export const SERVER = path.join(ROOT, 'apps/server/src/main.ts');

/** Runs `node apps/cli/src/main.ts …` and answers its JSON lines, how long it took and its CPU. */
export function crmCli(dbEnv: Record<string, string>, ...args: string[]) {
  return new Promise<{ lines: Array<Record<string, unknown>>; seconds: number; cpuSeconds: number }>(
    (resolve, reject) => {
      const t0 = performance.now();
      const child = spawn(process.execPath, [CLI, ...args], {
        env: { ...process.env, LOG_LEVEL: 'warn', ...dbEnv },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let stdout = '';
      child.stdout.on('data', (c) => {
        stdout += c;
      });
      child.on('error', reject);
      let cpu = 0;
      const sample = setInterval(() => {
        cpu = cpuMsOf(child.pid as number) ?? cpu;
      }, 500);
      child.on('close', (code) => {
        clearInterval(sample);
        if (code !== 0) return reject(new Error(`crm ${args.join(' ')} exited ${code}: ${stdout}`));
        resolve({
          lines: stdout
            .split('\n')
            .filter(Boolean)
            .map((l) => JSON.parse(l)),
          seconds: (performance.now() - t0) / 1000,
          cpuSeconds: cpu / 1000,
        });
      });
    },
  );
}

/** One API call with a JSON body (or none); throws on an answer that is not 2xx. */
export async function apiCall(url: string, key: string, method: string, p: string, json?: unknown) {
  const res = await fetch(`${url}${API}${p}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  const body = (await res.json()) as { data: unknown; meta?: Record<string, unknown> };
  if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}
