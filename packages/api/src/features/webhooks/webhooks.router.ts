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
} from './webhook.schemas.ts';
import {
  activateWebhook,
  createWebhook,
  deleteWebhook,
  listDeliveries,
  listWebhooks,
  replayDelivery,
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
      },
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
        successDescription: 'Created',
      },
      successStatus: 201,
    })
    .input(WebhookCreateInput)
    .output(WebhookCreateResponse)
    .mutation(async ({ ctx, input }) => ({ data: await createWebhook(ctx, input) })),

  delete: authedProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/webhooks/{id}',
        tags,
        summary: 'Delete a webhook endpoint with its delivery history',
      },
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
      },
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
      },
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
        successDescription: 'Queued',
      },
      successStatus: 202,
    })
    .input(DeliveryParams)
    .output(dataOf(WebhookDelivery))
    .mutation(({ ctx, input }) =>
      ctx.em.transactional(async (em) => ({ data: await replayDelivery(em, input) })),
    ),
});
