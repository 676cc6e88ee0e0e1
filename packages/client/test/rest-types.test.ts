import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { GENERATED_FILE, renderRestTypes } from '../scripts/rest-types.ts';

describe('the REST SDK types', () => {
  it('match the OpenAPI document the server serves (run `npm run generate -w @crm/client` after changing a schema)', async () => {
    expect(await readFile(GENERATED_FILE, 'utf8')).toBe(await renderRestTypes());
  });
});
