import { randomBytes } from 'node:crypto';

/**
 * A JSON object as the database stored it, kept as its text: a list's `custom` values. The REST door
 * splices the text into its answer (`jsonText`) instead of the driver parsing it and the door serializing
 * it again, which was most of what 20 custom values added to a page of deals (docs/development.md, custom
 * fields in `npm run bench`). Every other serializer (tRPC, MCP, the idempotency store) gets the parsed
 * object from `toJSON`. Only lists answer it: code that reads a record's values gets objects.
 */
export class StoredJson {
  readonly text: string;
  #parsed: unknown;
  constructor(text: string) {
    this.text = text;
  }

  toJSON(): unknown {
    if (splices) return `${MARK}${splices.push(this.text) - 1}`;
    this.#parsed ??= JSON.parse(this.text);
    return this.#parsed;
  }
}

/** A jsonb column selected as text (`::text`) as a StoredJson; parsed (a detail's) or absent, as it came. */
export const storedJson = <T>(value: unknown): T =>
  (typeof value === 'string' ? new StoredJson(value) : value) as T;

// A serialization's spliced texts, by the number in their mark: JSON.stringify is synchronous, so one at a time.
let splices: string[] | undefined;
// Random per process: no string a client stored can be taken for a mark (serialized, U+0000 is `\u0000`).
const NONCE = randomBytes(16).toString('hex');
const MARK = `\u0000${NONCE}:`;
const MARKED = new RegExp(`"\\\\u0000${NONCE}:(\\d+)"`, 'g');

/** `JSON.stringify(value)`, with each StoredJson's text as it was stored. */
export function jsonText(value: unknown): string {
  const texts: string[] = [];
  splices = texts;
  let text: string;
  try {
    text = JSON.stringify(value);
  } finally {
    splices = undefined;
  }
  return texts.length === 0 ? text : text.replace(MARKED, (_, i: string) => texts[Number(i)] as string);
}
