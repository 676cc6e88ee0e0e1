import { describe, expect, it } from 'vitest';
import { uuidv7 } from '../src/ids.ts';

describe('uuidv7 (the one way ids are made)', () => {
  it('makes RFC 9562 version-7 ids carrying the time they were made', () => {
    const before = Date.now();
    const id = uuidv7();
    const after = Date.now();
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const ms = Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16);
    expect(ms).toBeGreaterThanOrEqual(before);
    expect(ms).toBeLessThanOrEqual(after);
  });

  it('stays unique and increasing across many refills of its random buffer', () => {
    // 20,000 ids use the 1,024-word buffer about fifteen times over, most of them within one millisecond.
    const ids = Array.from({ length: 20_000 }, () => uuidv7());
    expect(new Set(ids).size).toBe(ids.length);
    for (let i = 1; i < ids.length; i++) expect((ids[i] as string) > (ids[i - 1] as string)).toBe(true);
    // The random tails differ: a buffer read again from the start would repeat them.
    const tails = new Set(ids.map((id) => id.slice(-12)));
    expect(tails.size).toBe(ids.length);
  });
});
