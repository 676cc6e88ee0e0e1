import { z } from 'zod';

/** Building blocks shared by every feature's schemas. */

export const Uuid = z.uuid();

/** PostgreSQL's timestamptz cannot take year 0 or five-digit years; keep dates where both sides agree. */
const EARLIEST = Date.UTC(1000, 0, 1);
const LATEST = Date.UTC(10000, 0, 1);
export const DateTime = z.iso.datetime({ offset: true }).refine((v) => {
  const t = Date.parse(v);
  // What does not parse (a leap second, 23:59:60) is the format's to name, not the years'.
  return Number.isNaN(t) || (t >= EARLIEST && t < LATEST);
}, 'must be between the years 1000 and 9999');
export const DateTimeOut = z.iso.datetime();

export const IdParam = z.strictObject({ id: Uuid.describe('Resource id (uuid)') });

/** Decimal digits, signed: a number below its range is the range's to refuse ("Too small"), naming it. */
const DECIMAL_INTEGER = /^-?\d+$/;

/**
 * An integer query parameter in `range`, `fallback` when absent. REST sends it as text, taken only as
 * decimal digits: `Number()` (z.coerce's rule) read `0x10` as 16, `1e2` as 100 and an empty `limit=` as
 * 0. tRPC and MCP send a JSON number, checked as it is. A prefault, not a default: zod leaves a default
 * out of the input JSON Schema of a schema that converts, and the OpenAPI document shows it.
 */
export const queryInteger = (range: z.ZodNumber, fallback: number) =>
  z
    // Typed as the number a typed caller (tRPC, @crm/client) sends, so `limit: 'ten'` fails to compile
    // there; REST's text reaches the same function untyped, as `raw`.
    .preprocess((value: number, ctx) => {
      const raw: unknown = value;
      if (typeof raw !== 'string') return raw;
      if (DECIMAL_INTEGER.test(raw)) return Number(raw);
      ctx.addIssue({ code: 'custom', message: `expected a decimal integer, got ${JSON.stringify(raw)}` });
      return z.NEVER;
    }, range.int())
    .prefault(fallback);

export const Pagination = {
  limit: queryInteger(z.number().min(1).max(100), 50).describe('Page size, 1..100'),
  offset: queryInteger(z.number().min(0), 0).describe('Items to skip, >= 0'),
};

export const PaginationMeta = z.object({
  total: z.number().int().min(0),
  limit: z.number().int().min(1),
  offset: z.number().int().min(0),
});

/** Lists that can also be read page after page by cursor, Stripe's `starting_after` way. */
export const CursorPagination = {
  ...Pagination,
  after: Uuid.optional().describe(
    'Continue after this item (its id: the previous page’s `meta.next_cursor`), reading in index order; instead of `offset`',
  ),
};

export const CursorPaginationMeta = PaginationMeta.extend({
  next_cursor: Uuid.nullable().describe('Pass as `after` for the next page; null on the last page'),
});

export const SuccessResponse = z.object({ success: z.literal(true) });

/**
 * The rules of every text input, on a string schema of any format: PostgreSQL text cannot hold NUL, so it
 * is refused up front with the field's name (a NUL reached the database as a protocol error, answered 503).
 */
export const asText = <T extends z.ZodType<string>>(schema: T): T =>
  schema
    .refine((v) => !v.includes('\u0000'), 'must not contain NUL characters')
    // A lone surrogate ("\ud800") is no text: the database would store U+FFFD, not what was answered.
    .refine((v) => v.isWellFormed(), 'must be valid Unicode text (it has a lone surrogate)');

/** Any text input (see asText). */
export const Text = () => asText(z.string());

/** Optional free text in inputs: bounded so one field cannot fill the 1 MB body on its own. */
export const ShortText = Text().max(1_000);
export const LongText = Text().max(100_000);

export const dataOf = <T extends z.ZodType>(schema: T) => z.object({ data: schema });

export const toIso = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);
