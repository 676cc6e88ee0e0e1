import { z } from 'zod';
import { DateTime, DateTimeOut, queryInteger, Uuid } from '../../schemas.ts';
import { Actor } from '../events/event-feed.schemas.ts';

/** `?as_of=` on a detail read: the record as it was then (docs/api/history.md). */
export const AsOf = DateTime.optional().describe(
  'Read the record as it was at this instant (ISO 8601 with offset); its nested parts (counts, stakeholders, activities) are current (docs/api/history.md)',
);

export const HistoryQuery = z.strictObject({
  id: Uuid.describe('Resource id (uuid)'),
  field: z
    .string()
    .max(2_000)
    .transform((value) => [
      ...new Set(
        value
          .split(',')
          .map((f) => f.trim())
          .filter(Boolean),
      ),
    ])
    .optional()
    .describe('Only these fields, comma-separated: `stage_id,expected_close_date,custom.region`'),
  limit: queryInteger(z.number().min(1).max(500), 100).describe('Page size, 1..500'),
  after: z
    .string()
    .regex(/^\d{1,18}$/, 'must be a cursor from meta.next_cursor')
    .optional()
    .describe('Continue after this cursor (the previous page’s `meta.next_cursor`)'),
});
export type HistoryQuery = z.infer<typeof HistoryQuery>;

export const HistoryEntry = z
  .object({
    field: z.string().describe('The field: a name of the record’s output, or `custom.<key>`'),
    value: z.unknown().describe('The value it held (as the record’s output shows it; null when unset)'),
    from: DateTimeOut.describe('Held from this instant (the change’s event time; a creation’s created_at)'),
    until: DateTimeOut.nullable().describe(
      'Until this instant (the next change of the field); null while current',
    ),
    actor: Actor,
    event_id: Uuid.nullable().describe(
      'The event that made the change (GET /events/{id}); null for values recorded when history began',
    ),
  })
  .meta({ id: 'HistoryEntry' });

export const History = z
  .object({
    data: z.array(HistoryEntry),
    meta: z.object({
      limit: z.number().int().min(1),
      next_cursor: z.string().nullable().describe('Pass as `after` for the next page; null on the last page'),
    }),
  })
  .meta({ id: 'HistoryResponse' });

const StageTime = z.object({
  stage_id: Uuid,
  stage_name: z.string().nullable().describe('The stage’s name now (null if it was deleted)'),
  days: z.number().describe('Days spent in it, to two decimals'),
});

export const DealHistorySummary = z
  .object({
    data: z.object({
      deal_id: Uuid,
      history_from: DateTimeOut.describe(
        'When the deal’s history begins: its creation, or when history began to be kept for older deals',
      ),
      stage: StageTime.extend({ since: DateTimeOut }).describe('The stage the deal is in, since when'),
      stages: z
        .array(StageTime.extend({ visits: z.number().int().min(1) }))
        .describe('Each stage the deal was in before, with the days it spent there in all, oldest first'),
      expected_close_date: z
        .object({
          moves: z
            .number()
            .int()
            .min(0)
            .describe('How often it changed from one date to another (setting a first one is no move)'),
          pushed: z.number().int().min(0).describe('Moves to a later date'),
          pulled_in: z.number().int().min(0).describe('Moves to an earlier date'),
          first: DateTimeOut.nullable().describe('The first date it was given'),
          current: DateTimeOut.nullable(),
        })
        .describe('How the expected close date moved'),
    }),
  })
  .meta({ id: 'DealHistorySummaryResponse' });
