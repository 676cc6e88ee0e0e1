import { WEBHOOK_EVENT_TYPES } from '@crm/db';
import { z } from 'zod';
import { FilterParam } from '../../query/schemas.ts';
import { DateTimeOut, queryInteger, Uuid } from '../../schemas.ts';

export const EventType = z.enum(WEBHOOK_EVENT_TYPES);

/** A cursor is a position in the organization's feed, as `meta.next_cursor` and each event's `cursor` give it. */
const Cursor = z
  .string()
  .regex(/^\d{1,19}$/, 'must be a cursor from meta.next_cursor or an event’s cursor')
  .refine(
    (v) => !/^\d{1,19}$/.test(v) || BigInt(v) <= 9_223_372_036_854_775_807n,
    'must be a cursor from meta.next_cursor or an event’s cursor',
  )
  .describe('Where to continue: `meta.next_cursor` of the previous page, or an event’s `cursor`');

export const EventListQuery = z.strictObject({
  after: Cursor.optional().describe(
    'Only events after this cursor (`meta.next_cursor` of the previous page); without it, from the oldest kept',
  ),
  types: z
    .string()
    .max(1_000)
    .transform((value, ctx) => {
      const types = value
        .split(',')
        .map((t) => t.trim())
        .filter(Boolean);
      const unknown = types.filter((t) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(t));
      if (unknown.length > 0 || types.length === 0) {
        ctx.addIssue({
          code: 'custom',
          message: `${unknown.length > 0 ? `unknown event type ${unknown.join(', ')}` : 'no event type given'}; the types are ${WEBHOOK_EVENT_TYPES.join(', ')}`,
        });
        return z.NEVER;
      }
      return [...new Set(types)];
    })
    .optional()
    .describe('Only these types, comma-separated: `deal.created,deal.won`'),
  limit: queryInteger(z.number().min(1).max(500), 100).describe('Page size, 1..500'),
  filter: FilterParam.optional().describe(
    'Only events whose record (`data`) meets this filter, as URL-encoded JSON: the query language of the lists (docs/api/query.md) over the record of every kind in `types` (required with it). At most 5,000 events are read per call: `meta.next_cursor` moves past those filtered out',
  ),
});
export type EventListQuery = z.infer<typeof EventListQuery>;

export const Actor = z
  .union([
    z.object({ type: z.literal('api_key'), api_key_id: Uuid, via: z.enum(['rest', 'trpc', 'mcp']) }),
    z.object({ type: z.literal('user'), user_id: z.string(), via: z.literal('dashboard') }),
  ])
  .nullable()
  .describe(
    'Who made the change: an API key (through REST, tRPC or MCP) or a dashboard user; null when unknown',
  );

const FieldChange = z.object({ from: z.unknown(), to: z.unknown() });
const StageRef = z.object({ id: Uuid, name: z.string(), stage_type: z.string() });

export const FeedEvent = z
  .object({
    id: Uuid.describe('The event’s id: the `webhook-id` of its webhook deliveries'),
    type: EventType,
    timestamp: DateTimeOut.describe('When the change was made: the `timestamp` of its webhook body'),
    cursor: Cursor.describe('Its place in the feed: pass it as `after` to read what came after it'),
    data: z
      .record(z.string(), z.unknown())
      .describe('The resource as the REST API returned it, as in the webhook body'),
    changes: z
      .record(z.string(), FieldChange)
      .optional()
      .describe('Updates: each changed field with its previous (`from`) and new (`to`) value'),
    stage: z
      .object({ from: StageRef, to: StageRef })
      .optional()
      .describe('Stage events: the stage left and entered'),
    actor: Actor,
    request_id: z.string().nullable().describe('The `X-Request-Id` of the request that made the change'),
  })
  .meta({ id: 'Event' });

export const EventList = z.object({
  data: z.array(FeedEvent),
  meta: z.object({
    next_cursor: z
      .string()
      .nullable()
      .describe(
        'Pass as `after` for the next page (or to poll for new events); null while the feed is empty. With `filter`, past the last event read, matching or not',
      ),
    has_more: z
      .boolean()
      .describe('Whether more events follow right now (with `filter`: more to read, matching or not)'),
  }),
});

export const EventIdParam = z.strictObject({ id: Uuid.describe('Event id (the webhook-id)') });
