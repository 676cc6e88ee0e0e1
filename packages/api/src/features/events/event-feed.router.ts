import { dataOf } from '../../schemas.ts';
import { authedProcedure, router } from '../../trpc.ts';
import { EventIdParam, EventList, EventListQuery, FeedEvent } from './event-feed.schemas.ts';
import { getEvent, listEvents } from './event-feed.service.ts';

const tags = ['Events'];

export const eventsRouter = router({
  list: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/events',
        tags,
        summary: 'The organization’s events, in commit order, after a cursor',
        description:
          'Returns the events of the last `CRM_EVENTS_RETENTION_DAYS` days (90 by default) in the order they were committed, each with the same id, type, timestamp and data as its webhook delivery, who made the change and the request id. Page with `after` = `meta.next_cursor`: the cursor never skips an event, even one whose transaction committed after the reader passed its time. Poll with the last `next_cursor` to catch up after missed webhooks.',
      },
      scope: 'events:read',
      agentHint:
        'Use to see what changed recently, or to catch up from a cursor: events in commit order with who made each change.',
      rateLimit: 'events',
    })
    .input(EventListQuery)
    .output(EventList)
    .query(({ ctx, input }) => listEvents(ctx, input)),

  get: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/events/{id}',
        tags,
        summary: 'One event',
        description:
          'Returns one event by its id (the `webhook-id` of its deliveries), to reconcile a webhook against the feed. An unknown event, one of another organization or one past the retention is a 404.',
      },
      scope: 'events:read',
      agentHint: 'Use to read one event by its id, e.g. the webhook-id of a delivery.',
      rateLimit: 'events',
    })
    .input(EventIdParam)
    .output(dataOf(FeedEvent))
    .query(async ({ ctx, input }) => ({ data: await getEvent(ctx, input.id) })),
});
