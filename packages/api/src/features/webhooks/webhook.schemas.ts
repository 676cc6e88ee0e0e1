import { DELIVERY_STATUSES, TEST_EVENT_TYPE, WEBHOOK_EVENT_TYPES } from '@crm/db';
import { z } from 'zod';
import { FilterBody } from '../../query/schemas.ts';
import { asText, DateTimeOut, Pagination, PaginationMeta, Uuid } from '../../schemas.ts';

export const WebhookEvent = z.enum(WEBHOOK_EVENT_TYPES).meta({ id: 'WebhookEvent' });
export type WebhookEvent = z.infer<typeof WebhookEvent>;

/** What a delivery carried: a subscribed event, or the test event an admin sent from the dashboard. */
export const DeliveredEvent = z
  .enum([...WEBHOOK_EVENT_TYPES, TEST_EVENT_TYPE])
  .describe(`An event type; ${TEST_EVENT_TYPE} for a test event sent from the dashboard`);

export const DeliveryStatus = z
  .enum(DELIVERY_STATUSES)
  .describe(
    'pending: waiting for its next attempt; succeeded; failed: retries used up; cancelled: the endpoint was deactivated',
  );

/**
 * Where deliveries go: an absolute http(s) URL without credentials (the signature authenticates), text
 * like every other input, on a port something can listen on.
 */
/** A webhook's filter: over the record of each event it subscribes to (docs/api/webhooks.md#filters). */
const WebhookFilter = FilterBody.describe(
  'Only events whose record (`data`) meets this filter are delivered: the query language of the lists (docs/api/query.md) over the record of every kind in `events`, which it must fit. Shown only when set',
);

const WebhookUrl = asText(
  z.url({ protocol: /^https?$/, error: 'must be an absolute http or https URL' }).max(2_000),
)
  .refine((url) => {
    const parsed = URL.parse(url);
    return !parsed || (parsed.username === '' && parsed.password === '');
  }, 'must not contain a user name or password')
  .refine((url) => URL.parse(url)?.port !== '0', 'must not name port 0');

export const Webhook = z
  .object({
    id: Uuid,
    url: z.url(),
    events: z.array(WebhookEvent),
    is_active: z.boolean(),
    failure_count: z.number().int().min(0),
    last_triggered_at: DateTimeOut.nullable(),
    created_at: DateTimeOut,
    filter: WebhookFilter.optional(),
  })
  .meta({ id: 'Webhook' });
export type WebhookDto = z.infer<typeof Webhook>;

export const WebhookCreateInput = z
  .strictObject({
    url: WebhookUrl,
    events: z
      .array(WebhookEvent)
      .min(1)
      .max(WEBHOOK_EVENT_TYPES.length * 4)
      .transform((events) => [...new Set(events)])
      .describe('The event kinds to receive; at least one'),
    filter: WebhookFilter.optional(),
  })
  .meta({
    id: 'WebhookCreateRequest',
    examples: [
      { url: 'https://example.com/webhooks/crm', events: ['deal.created', 'deal.won', 'deal.lost'] },
      {
        url: 'https://example.com/webhooks/big-deals',
        events: ['deal.updated'],
        filter: { field: 'value', op: 'gte', value: 50000 },
      },
    ],
  });
export type WebhookCreateInput = z.infer<typeof WebhookCreateInput>;

export const WebhookUpdateInput = z
  .strictObject({
    id: Uuid.describe('Webhook id (uuid)'),
    url: WebhookUrl.optional(),
    events: WebhookCreateInput.shape.events.optional(),
    filter: WebhookFilter.nullable().optional().describe('The new filter; null removes it'),
  })
  .meta({
    id: 'WebhookUpdateRequest',
    examples: [{ filter: { field: 'value', op: 'gte', value: 50000 } }, { filter: null }],
  });
export type WebhookUpdateInput = z.infer<typeof WebhookUpdateInput>;

export const WebhookCreateResponse = z
  .object({
    data: z.object({
      id: Uuid,
      secret: z.string().describe('The signing secret (whsec_…), shown only here: store it now'),
      url: z.url(),
      events: z.array(WebhookEvent),
      filter: WebhookFilter.optional(),
    }),
  })
  .meta({ id: 'WebhookCreateResponse' });

export const WebhookList = z.object({ data: z.array(Webhook) });

export const WebhookAttempt = z
  .object({
    attempt: z.number().int().min(1),
    attempted_at: DateTimeOut,
    duration_ms: z.number().int().min(0),
    response_status: z.number().int().nullable(),
    error: z
      .string()
      .nullable()
      .describe('Why it failed when the status does not say (timeout, refused address…)'),
    response_body: z.string().nullable().describe('The first 1 KB of the response'),
    succeeded: z.boolean(),
  })
  .meta({ id: 'WebhookAttempt' });

export const WebhookDelivery = z
  .object({
    id: Uuid,
    webhook_id: Uuid,
    event_id: Uuid.describe('The event; sent as the webhook-id header on every attempt'),
    event_type: DeliveredEvent,
    status: DeliveryStatus,
    attempt_count: z.number().int().min(0),
    next_attempt_at: DateTimeOut.nullable(),
    created_at: DateTimeOut,
    updated_at: DateTimeOut,
    attempts: z.array(WebhookAttempt),
  })
  .meta({ id: 'WebhookDelivery' });
export type WebhookDeliveryDto = z.infer<typeof WebhookDelivery>;

export const WebhookDeliveryListQuery = z.strictObject({
  id: Uuid.describe('Webhook id (uuid)'),
  ...Pagination,
  status: DeliveryStatus.optional(),
});
export type WebhookDeliveryListQuery = z.infer<typeof WebhookDeliveryListQuery>;

export const WebhookDeliveryList = z.object({ data: z.array(WebhookDelivery), meta: PaginationMeta });

export const DeliveryParams = z.strictObject({
  id: Uuid.describe('Webhook id (uuid)'),
  delivery_id: Uuid.describe('Delivery id (uuid)'),
});
