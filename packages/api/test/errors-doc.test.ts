import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { ERRORS_DOC_FILE, renderErrorsDoc } from '../scripts/errors-doc.ts';
import { ERRORS } from '../src/errors.ts';

describe('docs/api/errors.md', () => {
  it('lists the error table as it is (run `npm run docs` after changing ERRORS in src/errors.ts)', async () => {
    const committed = await readFile(ERRORS_DOC_FILE, 'utf8');
    expect(committed).toBe(renderErrorsDoc(committed));
  });

  it('has a row for every code, with its status', async () => {
    const committed = await readFile(ERRORS_DOC_FILE, 'utf8');
    for (const [code, { status }] of Object.entries(ERRORS))
      expect(committed).toContain(`| \`${code}\` | ${status} |`);
  });
});
