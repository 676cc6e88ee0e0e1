import { isUtf8 } from 'node:buffer';
import { Transform, type TransformCallback } from 'node:stream';

/** Where a file's bytes stop being UTF-8: the line (as an editor numbers it) and the column in bytes. */
export interface BadUtf8 {
  line: number;
  column: number;
  byte: number;
}

/** What a row with bytes that are not UTF-8 is rejected with (the API refuses a lone surrogate alike). */
export const describeBadUtf8 = (bad: BadUtf8): string =>
  `not UTF-8: byte 0x${bad.byte.toString(16).toUpperCase().padStart(2, '0')} at line ${bad.line}, column ${bad.column} (the column counts bytes)`;

const LF = 0x0a;
const CR = 0x0d;

/**
 * Passes a file's bytes on unchanged and notes where they are not UTF-8: decoding turns such bytes into
 * U+FFFD, so the parsers after it can no longer tell a broken row from one that holds U+FFFD. Noted is the
 * first bad byte of each line, in the order of the file, by its line (CRLF, LF and CR one break each, as
 * the readers number their rows) and its column in bytes (a UTF-8 byte-order mark is no part of line 1).
 * Validity as the WHATWG decoder has it: no overlong forms, surrogates or code points past U+10FFFF.
 */
export class Utf8Check extends Transform {
  private readonly found: BadUtf8[] = [];
  private line = 1;
  /** Bytes of the current line so far. */
  private column = 0;
  private lastWasCr = false;
  private started = false;
  private utf16 = false;
  /** The sequence being read: continuation bytes still due, the range the next one must be in, its start. */
  private due = 0;
  private lower = 0x80;
  private upper = 0xbf;
  private startColumn = 0;
  private startByte = 0;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    if (!this.started) {
      this.started = true;
      if (chunk[0] === 0xef && chunk[1] === 0xbb && chunk[2] === 0xbf) this.column = -3;
      // UTF-16's mark: csv-parse reads such a file as UTF-16 (its `bom`), no UTF-8 to check.
      if (chunk[0] === 0xff && chunk[1] === 0xfe) this.utf16 = true;
    }
    if (this.utf16) {
      done(null, chunk);
      return;
    }
    let i = 0;
    while (this.due > 0 && i < chunk.length) this.scan(chunk[i++] as number); // a character begun before
    // Byte by byte only where needed (62 MB/s): what the native check finds valid, up to a character the
    // chunk cuts off, only has its line breaks counted (0.9 GB/s on NDJSON deals).
    const whole = wholeCharactersEnd(chunk, i);
    if (isUtf8(chunk.subarray(i, whole))) {
      this.countLines(chunk, i, whole);
      i = whole;
    }
    for (; i < chunk.length; i++) this.scan(chunk[i] as number);
    done(null, chunk);
  }

  override _flush(done: TransformCallback): void {
    if (this.due > 0) this.bad(this.startColumn, this.startByte); // the file ends inside a character
    done();
  }

  /**
   * The first bad byte on lines `first` to `last` (a row's), once the reading has passed them; what it
   * noted on earlier lines (rows read past, the header) is dropped.
   */
  badByteIn(first: number, last = first): BadUtf8 | undefined {
    while ((this.found[0]?.line ?? Number.POSITIVE_INFINITY) < first) this.found.shift();
    const hit = this.found[0] && this.found[0].line <= last ? this.found[0] : undefined;
    while ((this.found[0]?.line ?? Number.POSITIVE_INFINITY) <= last) this.found.shift();
    return hit;
  }

  private scan(b: number): void {
    this.column++;
    if (this.due > 0) {
      if (b >= this.lower && b <= this.upper) {
        this.lower = 0x80;
        this.upper = 0xbf;
        this.due--;
        return;
      }
      // The sequence broke off: it is bad, and this byte starts afresh.
      this.due = 0;
      this.lower = 0x80;
      this.upper = 0xbf;
      this.bad(this.startColumn, this.startByte);
    }
    if (b < 0x80) {
      if (b === LF) {
        if (!this.lastWasCr) this.line++;
        this.column = 0;
      } else if (b === CR) {
        this.line++;
        this.column = 0;
      }
      this.lastWasCr = b === CR;
      return;
    }
    this.lastWasCr = false;
    if (b >= 0xc2 && b <= 0xdf) this.due = 1;
    else if (b >= 0xe0 && b <= 0xef) {
      this.due = 2;
      if (b === 0xe0) this.lower = 0xa0;
      if (b === 0xed) this.upper = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      this.due = 3;
      if (b === 0xf0) this.lower = 0x90;
      if (b === 0xf4) this.upper = 0x8f;
    } else {
      this.bad(this.column, b);
      return;
    }
    this.startColumn = this.column;
    this.startByte = b;
  }

  /** The line breaks of valid text, as `scan` counts them. */
  private countLines(chunk: Buffer, from: number, to: number): void {
    if (to <= from) return;
    const find = (byte: number, at: number) => {
      const found = chunk.indexOf(byte, at);
      return found >= 0 && found < to ? found : -1;
    };
    let cr = find(CR, from);
    let lf = find(LF, from);
    let lastBreak = -1;
    while (cr >= 0 || lf >= 0) {
      if (lf < 0 || (cr >= 0 && cr < lf)) {
        this.line++;
        lastBreak = cr;
        cr = find(CR, cr + 1);
      } else {
        const afterCr = lf > from ? chunk[lf - 1] === CR : this.lastWasCr;
        if (!afterCr) this.line++;
        lastBreak = lf;
        lf = find(LF, lf + 1);
      }
    }
    this.column = lastBreak >= 0 ? to - 1 - lastBreak : this.column + (to - from);
    this.lastWasCr = chunk[to - 1] === CR;
  }

  /** A sequence is bad from `column` of the current line (it cannot span a line break). */
  private bad(column: number, byte: number): void {
    if (this.found.at(-1)?.line !== this.line) this.found.push({ line: this.line, column, byte });
  }
}

/** Where the last character that `chunk` holds whole (from `from` on) ends: before one it cuts off. */
function wholeCharactersEnd(chunk: Buffer, from: number): number {
  for (let i = chunk.length - 1; i >= Math.max(from, chunk.length - 3); i--) {
    const b = chunk[i] as number;
    if ((b & 0xc0) === 0x80) continue; // a continuation byte: its lead is further back
    const length = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return chunk.length - i < length ? i : chunk.length;
  }
  return chunk.length;
}
