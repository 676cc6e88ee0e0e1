import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { EnvSchema } from '../src/index.ts';

const DOC = new URL('../../../docs/configuration.md', import.meta.url);

/** Variables whose default the doc describes in words rather than as the value (a path of the checkout). */
const DESCRIBED_DEFAULTS = new Set(['CRM_DATA_DIR']);

/** The doc's table: each row's variable and its default cell. */
async function documented(): Promise<Map<string, string>> {
  const rows = new Map<string, string>();
  for (const line of (await readFile(DOC, 'utf8')).split('\n')) {
    const [, name, cell] = /^\| `([A-Z][A-Z0-9_]*)` \| ([^|]*) \|/.exec(line) ?? [];
    if (!name || cell === undefined) continue;
    expect(rows.has(name), `${name} is listed twice`).toBe(false);
    rows.set(name, cell.trim());
  }
  return rows;
}

/** What the schema falls back to when the variable is unset, as the environment would spell it. */
function schemaDefault(name: string): string | undefined {
  const def = EnvSchema.shape[name as keyof typeof EnvSchema.shape].def as {
    type: string;
    defaultValue?: unknown;
  };
  return def.type === 'default' || def.type === 'prefault' ? String(def.defaultValue) : undefined;
}

describe('docs/configuration.md', () => {
  it('lists exactly the variables packages/config reads', async () => {
    const inDoc = [...(await documented()).keys()].sort();
    expect(inDoc).toEqual(Object.keys(EnvSchema.shape).sort());
  });

  it('gives each variable the default the schema has (or unset when it has none)', async () => {
    for (const [name, cell] of await documented()) {
      const fallback = schemaDefault(name);
      const value = /^`([^`]*)`$/.exec(cell)?.[1];
      if (fallback === undefined)
        expect(value, `${name} has no default, the doc says ${cell}`).toBeUndefined();
      else if (DESCRIBED_DEFAULTS.has(name)) expect(value).toBeUndefined();
      else expect(value, `${name}'s default`).toBe(fallback);
    }
  });
});
