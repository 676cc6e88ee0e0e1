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

export const IdParam = z.object({ id: Uuid.describe('Resource id (uuid)') });

export const Pagination = {
  limit: z.coerce.number().int().min(1).max(100).default(50).describe('Page size, 1..100'),
  offset: z.coerce.number().int().min(0).default(0).describe('Items to skip, >= 0'),
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
