import { run } from '../src/cli.ts';

/** What a CLI run printed, as `node apps/cli/src/main.ts` would have written it. */
export type CliResult = {
  code: number;
  /** Every stdout line followed by its newline, as main.ts writes it. */
  stdout: string;
  /** Every stderr line followed by its newline, as main.ts writes it. */
  stderr: string;
  /** stdout as JSON, one object per line; parsed on use, so a test about usage text can read stdout. */
  readonly lines: Array<Record<string, unknown>>;
};

/**
 * Runs the CLI (what `npm run --silent crm -- …` runs) in this process, with `env` as its whole
 * environment, so only the database given there is used. Each call opens and closes that database,
 * as a separate `crm` command does.
 */
export async function crm(env: Record<string, string | undefined>, ...args: string[]): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const code = await run(args, env, {
    stdout: (line) => {
      stdout += `${line}\n`;
    },
    stderr: (line) => {
      stderr += `${line}\n`;
    },
  });
  return {
    code,
    stdout,
    stderr,
    get lines() {
      return stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    },
  };
}
