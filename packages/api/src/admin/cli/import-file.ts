import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { PassThrough, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parse } from 'csv-parse';
import type { SourceRow } from '../../features/deals/deal-import.ts';
import type { ImportObject } from '../../record-import.ts';
import { CliError } from './errors.ts';
import { describeBadUtf8, Utf8Check } from './utf8-check.ts';

/** A file being read row by row, with how far into it the reading is (for a progress bar). */
export interface ImportFile {
  rows: AsyncIterable<SourceRow>;
  totalBytes: number;
  bytesRead(): number;
}

/** CSV columns that hold numbers (every other one is text, an empty cell is no value). */
const NUMBER_COLUMNS = new Set(['value']);
/** CSV columns `contact.<field>` give the deal one contact. */
const CONTACT_PREFIX = 'contact.';
/** An activity's CSV columns `links.deal`, `links.contact`, `links.company`: ids, separated by spaces. */
const LINKS_PREFIX = 'links.';

/**
 * Opens an import file: `.ndjson` / `.jsonl` (one JSON object per line, the API's own field names) or
 * `.csv` (a header row of the same names; `contact.name`, `contact.email`, `contact.title`,
 * `contact.phone`, `contact.role_type` give the deal one contact). Streamed: a million rows never sit in
 * memory. A line that is not JSON is a row the import rejects with the parser's reason, and a row with bytes
 * that are not UTF-8 one it rejects naming the first (see Utf8Check).
 */
export async function openImportFile(path: string, object: ImportObject = 'deals'): Promise<ImportFile> {
  const format = /\.(ndjson|jsonl)$/i.test(path) ? 'ndjson' : /\.csv$/i.test(path) ? 'csv' : undefined;
  if (!format) throw new CliError(`${path}: give a .csv, .ndjson or .jsonl file`);
  let totalBytes: number;
  try {
    const info = await stat(path);
    if (!info.isFile()) throw new CliError(`${path} is not a file`);
    totalBytes = info.size;
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new CliError(`cannot read ${path}: ${(err as Error).message}`);
  }
  let read = 0;
  const counter = () =>
    new Transform({
      transform(chunk: Buffer, _encoding, done) {
        read += chunk.length;
        done(null, chunk);
      },
    });
  return {
    rows: format === 'ndjson' ? ndjsonRows(path, counter()) : csvRows(path, counter(), object),
    totalBytes,
    bytesRead: () => read,
  };
}

/** A file read through `stages`: an error of any (the file's own, EACCES, EIO) ends the reading with it. */
function readThrough<T extends NodeJS.ReadWriteStream>(path: string, stages: Transform[], last: T): T {
  pipeline([createReadStream(path), ...stages, last]).catch(() => {
    // pipeline destroys every stage with the error: the reader of `last` sees it
  });
  return last;
}

async function* ndjsonRows(path: string, counter: Transform): AsyncIterable<SourceRow> {
  const utf8 = new Utf8Check();
  const input = readThrough(path, [counter, utf8], new PassThrough());
  let line = 0;
  for await (const raw of createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY })) {
    line++;
    const text = line === 1 ? raw.replace(/^\uFEFF/, '') : raw; // a byte-order mark is no part of the row
    if (text.trim() === '') continue;
    const bad = utf8.badByteIn(line);
    if (bad) {
      yield { line, value: text, unreadable: describeBadUtf8(bad) };
      continue;
    }
    try {
      yield { line, value: JSON.parse(text) };
    } catch (err) {
      yield { line, value: text, unreadable: `not JSON: ${(err as Error).message}` };
    }
  }
}

/**
 * The line each CSV record starts on, counted from the records' raw text in the order csv-parse reads
 * them: its own `info.lines` is the line a record ends on, and counts a CRLF inside a quoted cell as two
 * lines. CRLF, LF and CR are one line break each; the header is taken to be line 1.
 */
class CsvLines {
  private linesBefore = 1;
  private endedOnCr = false;

  /** The first and last lines of `raw`: a record as csv-parse read it, with any blank lines before it. */
  next(raw: string): { first: number; last: number } {
    // A CRLF split between two records' raw text (the CR ending one, the LF opening the next) is one break.
    const text = this.endedOnCr && raw.startsWith('\n') ? raw.slice(1) : raw;
    this.endedOnCr = raw.endsWith('\r');
    const blank = /^(?:[ \t]*(?:\r\n|\r|\n))*/.exec(text)?.[0] ?? '';
    const first = this.linesBefore + 1 + lineBreaks(blank);
    this.linesBefore += lineBreaks(text);
    const record = text.slice(blank.length).replace(/(?:\r\n|\r|\n)$/, '');
    return { first, last: first + lineBreaks(record) };
  }
}

const lineBreaks = (text: string) => text.match(/\r\n|\r|\n/g)?.length ?? 0;

/**
 * CSV records, each with its first line. A record that cannot be read (an unclosed quote, more or fewer
 * fields than the header, bytes that are not UTF-8) is a row the import rejects with the reason, and the
 * reading goes on. A header that is not UTF-8 stops it: its columns cannot be known.
 */
async function* csvRows(path: string, counter: Transform, object: ImportObject): AsyncIterable<SourceRow> {
  const lines = new CsvLines();
  const utf8 = new Utf8Check();
  const skipped: SourceRow[] = [];
  const parser = readThrough(
    path,
    [counter, utf8],
    parse({
      columns: (header: string[]) => {
        const bad = utf8.badByteIn(1);
        if (bad) throw new CliError(`${path}: the header is ${describeBadUtf8(bad)}`);
        return header;
      },
      bom: true,
      skip_empty_lines: true,
      trim: true,
      raw: true,
      skip_records_with_error: true,
      // These run as the parser reads, in the file's order: that is what the line count needs.
      on_record: ({ record, raw }: { record: Record<string, string>; raw: string }): SourceRow => {
        const { first, last } = lines.next(raw);
        const bad = utf8.badByteIn(first, last);
        return bad
          ? { line: first, value: raw, unreadable: describeBadUtf8(bad) }
          : { line: first, value: object === 'activities' ? activityFromCsv(record) : fromCsv(record) };
      },
      on_skip: (err: { message: string } | undefined, raw?: string) => {
        const { first, last } = lines.next(raw ?? '');
        const bad = utf8.badByteIn(first, last);
        if (err)
          skipped.push({
            line: first,
            value: raw ?? null,
            unreadable: bad ? describeBadUtf8(bad) : err.message,
          });
      },
    }),
  );
  // The parser reads ahead: a skipped record is reported in its place among the others, by line.
  const skippedBefore = function* (line: number) {
    skipped.sort((x, y) => x.line - y.line);
    while (skipped.length > 0 && (skipped[0] as SourceRow).line < line) yield skipped.shift() as SourceRow;
  };
  for await (const row of parser as AsyncIterable<SourceRow>) {
    yield* skippedBefore(row.line);
    yield row;
  }
  yield* skippedBefore(Number.POSITIVE_INFINITY);
}

/** A CSV record as the JSON row it stands for. */
function fromCsv(record: Record<string, string>): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  const contact: Record<string, unknown> = {};
  for (const [column, cell] of Object.entries(record)) {
    if (cell === '' || cell === undefined) continue;
    const value = NUMBER_COLUMNS.has(column) && /^-?\d+(\.\d+)?$/.test(cell) ? Number(cell) : cell;
    if (column.startsWith(CONTACT_PREFIX)) contact[column.slice(CONTACT_PREFIX.length)] = value;
    else row[column] = value;
  }
  if (Object.keys(contact).length > 0) row.contacts = [contact];
  return row;
}

/**
 * An activity's CSV record as its JSON row: `links.deal`, `links.contact`, `links.company` hold ids (several
 * separated by spaces) that become `links`, in that order; `participants` holds contact ids likewise.
 */
function activityFromCsv(record: Record<string, string>): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  const links: Array<{ type: string; id: string }> = [];
  const ids = (cell: string) => cell.split(/\s+/).filter(Boolean);
  for (const [column, cell] of Object.entries(record)) {
    if (cell === '' || cell === undefined) continue;
    if (column.startsWith(LINKS_PREFIX))
      for (const id of ids(cell)) links.push({ type: column.slice(LINKS_PREFIX.length), id });
    else if (column === 'participants') row.participants = ids(cell);
    else row[column] = cell;
  }
  if (links.length > 0) row.links = links;
  return row;
}
