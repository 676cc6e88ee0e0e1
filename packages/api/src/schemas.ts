import { z } from 'zod';

/** Building blocks shared by every feature's schemas. */

export const Uuid = z.uuid();
export const DateTime = z.iso.datetime({ offset: true });
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

export const SuccessResponse = z.object({ success: z.literal(true) });

/** Optional free text in inputs: bounded so one field cannot fill the 1 MB body on its own. */
export const ShortText = z.string().max(1_000);
export const LongText = z.string().max(100_000);

export const dataOf = <T extends z.ZodType>(schema: T) => z.object({ data: schema });

export const toIso = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);
