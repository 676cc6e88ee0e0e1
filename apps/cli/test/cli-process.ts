import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { CHILD_NODE_FLAGS, COMPILE_CACHE } from '../../server/test/server-process.ts';

/** The checkout, where `npm run crm` runs the CLI. */
export const CHECKOUT = fileURLToPath(new URL('../../../', import.meta.url));
/** The CLI's entry point, as `npm run --silent crm --` starts it. */
export const CLI_MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));

export type ProcessResult = { code: number | null; stdout: string; stderr: string };

/**
 * `crm <args>` in a process of its own (with Node's compile cache, COMPILE_CACHE, beside `options.env`) (for what only a process shows: its exit code, what it writes, a
 * data directory held by another process, stdin closing), `input` written to its stdin and then closed.
 */
export function crmProcess(
  args: string[],
  options: { env: NodeJS.ProcessEnv; cwd?: string; input?: string },
): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...CHILD_NODE_FLAGS, CLI_MAIN, ...args], {
      cwd: options.cwd ?? CHECKOUT,
      env: { ...COMPILE_CACHE, ...options.env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}
