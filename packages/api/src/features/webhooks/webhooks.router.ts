import { z } from 'zod';
import { dataOf, IdParam, SuccessResponse } from '../../schemas.ts';
import { authedProcedure, router } from '../../trpc.ts';
import {
  DeliveryParams,
  Webhook,
  WebhookCreateInput,
  WebhookCreateResponse,
  WebhookDelivery,
  WebhookDeliveryList,
  WebhookDeliveryListQuery,
  WebhookList,
  WebhookUpdateInput,
} from './webhook.schemas.ts';
import {
  activateWebhook,
  createWebhook,
  deleteWebhook,
  listDeliveries,
  listWebhooks,
  replayDelivery,
  updateWebhook,
} from './webhooks.service.ts';

const tags = ['Webhooks'];

export const webhooksRouter = router({
  list: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/webhooks',
        tags,
        summary: 'List webhook endpoints (never their secrets)',
        description:
          'Returns the organization’s webhook endpoints with the events they receive, whether they are active and their consecutive failures. Secrets are never shown again.',
      },
      scope: 'webhooks:read',
      agentHint: 'Use to see which endpoints receive events.',
      rateLimit: 'webhooks',
    })
    .input(z.void())
    .output(WebhookList)
    .query(async ({ ctx }) => ({ data: await listWebhooks(ctx.em) })),

  create: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/webhooks',
        tags,
        summary: 'Create a webhook endpoint; its signing secret is shown only in this response',
        description:
          'Creates an endpoint that receives the events named, signed with a new secret (`whsec_…`) returned only here: store it. With `filter` (the lists’ query language over the event’s record, docs/api/query.md), only the events whose `data` meets it are delivered; a filter that does not fit the record of every kind named is a 400 naming the node. A URL that is not a public http(s) URL, or a 101st endpoint, is a 400. Not idempotent: a retried create makes a second endpoint.',
        successDescription: 'Created',
      },
      scope: 'webhooks:write',
      agentHint:
        'Use to subscribe an HTTPS endpoint to events. The answer holds the signing secret once: give it to the user to store.',
      successStatus: 201,
    })
    .input(WebhookCreateInput)
    .output(WebhookCreateResponse)
    .mutation(async ({ ctx, input }) => ({ data: await createWebhook(ctx, input) })),

  update: authedProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/webhooks/{id}',
        tags,
        summary: 'Change a webhook endpoint’s URL, event kinds or filter',
        description:
          'Changes the fields sent and returns the endpoint; `filter: null` removes its filter. The filter (kept or new) is checked against the record of every kind in `events`, as at creation: a field a kind’s record does not have, an operator that does not fit, is a 400 naming the node (`filter/and/1/field: …`). Events fanned out from then on follow the change. An unknown endpoint is a 404.',
      },
      scope: 'webhooks:write',
      agentHint:
        'Use to change which events an endpoint receives: its kinds, or a filter over their record (filter: {"field": "value", "op": "gte", "value": 50000}).',
    })
    .input(WebhookUpdateInput)
    .output(dataOf(Webhook))
    .mutation(async ({ ctx, input: { id, ...fields } }) => ({ data: await updateWebhook(ctx, id, fields) })),

  delete: authedProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/webhooks/{id}',
        tags,
        summary: 'Delete a webhook endpoint with its delivery history',
        description:
          'Deletes the endpoint with its deliveries and their attempts, and returns `{"success": true}`; it receives nothing more. An unknown endpoint is a 404.',
      },
      scope: 'webhooks:write',
      agentHint: 'Removes a webhook endpoint; only when the user asks for it.',
    })
    .input(IdParam)
    .output(SuccessResponse)
    .mutation(async ({ ctx, input }) => {
      await ctx.em.transactional((em) => deleteWebhook(em, input.id));
      return { success: true as const };
    }),

  activate: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/webhooks/{id}/activate',
        tags,
        summary: 'Re-activate an endpoint deactivated after failures; failure_count starts again at 0',
        description:
          'Turns an endpoint switched off after repeated failures (or a `410 Gone`) back on and returns it; it receives the events that happen from now on (replay the cancelled deliveries for the others). An unknown endpoint is a 404.',
      },
      scope: 'webhooks:write',
      agentHint: 'Use to switch a webhook endpoint that was deactivated after failures back on.',
    })
    .input(IdParam)
    .output(dataOf(Webhook))
    .mutation(({ ctx, input }) =>
      ctx.em.transactional(async (em) => ({ data: await activateWebhook(em, input.id) })),
    ),

  deliveries: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/webhooks/{id}/deliveries',
        tags,
        summary: 'An endpoint’s deliveries, newest first, with every attempt (kept for 30 days)',
        description:
          'Returns a page of the endpoint’s deliveries, optionally only those with a `status`, each with every attempt: its response status, duration, error and the first 1 KB of the response. An unknown endpoint is a 404.',
      },
      scope: 'webhooks:read',
      agentHint: 'Use to see whether events reached an endpoint: each delivery with its attempts and status.',
    })
    .input(WebhookDeliveryListQuery)
    .output(WebhookDeliveryList)
    .query(({ ctx, input }) => listDeliveries(ctx.em, input)),

  replay: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/webhooks/{id}/deliveries/{delivery_id}/replay',
        tags,
        summary: 'Send a delivery’s event again (same webhook-id), as a new delivery',
        description:
          'Queues the delivery’s event again as a new delivery with a fresh retry schedule and the same `webhook-id`, and returns it with 202. A deactivated endpoint is a 409 `webhook_inactive`; an unknown endpoint or delivery a 404.',
        successDescription: 'Queued',
      },
      scope: 'webhooks:write',
      agentHint: 'Use to send a failed delivery again once the receiver is fixed.',
      errors: ['webhook_inactive'],
      successStatus: 202,
    })
    .input(DeliveryParams)
    .output(dataOf(WebhookDelivery))
    .mutation(({ ctx, input }) =>
      ctx.em.transactional(async (em) => ({ data: await replayDelivery(em, input) })),
    ),
});
