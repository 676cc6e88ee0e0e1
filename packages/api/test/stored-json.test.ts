import { describe, expect, it } from 'vitest';
import { jsonText, StoredJson } from '../src/stored-json.ts';

describe('StoredJson: a list’s custom values as stored', () => {
  const stored = '{"arr": 120000, "tags": ["a", "b"], "note": "say \\"hi\\""}';

  it('goes into the REST body as its text, the rest serialized as JSON.stringify does', () => {
    const page = {
      data: [
        { id: 'd1', custom: new StoredJson(stored) },
        { id: 'd2', custom: {} },
      ],
      meta: { total: 2 },
    };
    const text = jsonText(page);
    expect(text).toBe(`{"data":[{"id":"d1","custom":${stored}},{"id":"d2","custom":{}}],"meta":{"total":2}}`);
    expect(JSON.parse(text).data[0].custom).toEqual({ arr: 120000, tags: ['a', 'b'], note: 'say "hi"' });
  });

  it('is the parsed object to every other serializer (tRPC, MCP)', () => {
    expect(JSON.stringify({ custom: new StoredJson(stored) })).toBe(
      JSON.stringify({ custom: { arr: 120000, tags: ['a', 'b'], note: 'say "hi"' } }),
    );
  });

  it('is not confused with a client’s string that looks like a splice mark', () => {
    const lookalike = '\u00000:0';
    const text = jsonText({ a: lookalike, b: new StoredJson('{"x": 1}') });
    expect(JSON.parse(text)).toEqual({ a: lookalike, b: { x: 1 } });
  });

  it('leaves the next serialization alone when one throws', () => {
    const cyclic: Record<string, unknown> = { custom: new StoredJson('{}') };
    cyclic.self = cyclic;
    expect(() => jsonText(cyclic)).toThrow();
    expect(JSON.stringify({ custom: new StoredJson('{"y": 2}') })).toBe('{"custom":{"y":2}}');
  });
});
