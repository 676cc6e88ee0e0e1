import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../src/openapi.ts';

/**
 * The served OpenAPI document passes Redocly's `recommended-strict` rules and Spectral's `spectral:oas`
 * ruleset without a warning, through the linters' own command lines and the rulesets at the repository's
 * root (redocly.yaml, .spectral.yaml), as a developer runs them.
 */

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const bin = (name: string) => path.join(ROOT, 'node_modules', '.bin', name);
const run = promisify(execFile);

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a linter's CLI on this Node (the bin scripts are Node scripts), never throwing on its exit code. */
async function lint(name: string, args: string[]): Promise<Outcome> {
  const env = {
    ...process.env,
    // No usage data sent and no update check: the result must not depend on the network.
    REDOCLY_TELEMETRY: 'off',
    REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
    NO_COLOR: '1',
  };
  try {
    const { stdout, stderr } = await run(process.execPath, [bin(name), ...args], {
      cwd: ROOT,
      env,
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number | string; stdout?: string; stderr?: string };
    if (typeof e.code !== 'number') throw error;
    return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe('the OpenAPI document, linted', () => {
  let dir: string;
  let file: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'crm-openapi-'));
    file = path.join(dir, 'openapi.json');
    await writeFile(file, JSON.stringify(buildOpenApiDocument(), null, 2));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("passes Redocly's recommended-strict rules", async () => {
    const out = await lint('redocly', [
      'lint',
      file,
      '--config',
      path.join(ROOT, 'redocly.yaml'),
      '--format',
      'json',
    ]);
    const report = JSON.parse(out.stdout) as {
      totals: { errors: number; warnings: number };
      problems: { ruleId: string; message: string; location: { pointer: string }[] }[];
    };
    const problems = report.problems.map((p) => `${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`);
    expect(problems).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
    expect(out.code, out.stderr).toBe(0);
  });

  it("passes Spectral's oas ruleset with no error or warning", async () => {
    const out = await lint('spectral', [
      'lint',
      file,
      '--ruleset',
      path.join(ROOT, '.spectral.yaml'),
      '--fail-severity=warn',
      '--format',
      'json',
      '--quiet',
    ]);
    const results = JSON.parse(out.stdout || '[]') as { code: string; path: string[]; message: string }[];
    const problems = results.map((r) => `${r.code} at ${r.path.join('.')}: ${r.message}`);
    expect(problems).toEqual([]);
    expect(out.code, out.stderr).toBe(0);
  });
});
