import { transaction } from '@crm/db';
import { z } from 'zod';
import { batchOf, createBatch } from '../../batch.ts';
import { dataOf, IdParam, SuccessResponse } from '../../schemas.ts';
import { authedProcedure, router } from '../../trpc.ts';
import { listActivitiesBy } from './activities.list.ts';
import { activityDto, createActivity, deleteActivity, updateActivity } from './activities.service.ts';
import {
  ActivityCreateInput,
  ActivityList,
  ActivityListQuery,
  ActivityQueryBody,
  ActivityUpdateInput,
  LoggedActivity,
  Timeline,
  TimelineQuery,
} from './activity.schemas.ts';
import { dealTimeline } from './timeline.service.ts';

const tags = ['Activities'];

export const activitiesRouter = router({
  list: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/activities',
        tags,
        summary: 'List logged activities, newest first',
        description:
          'Returns a page of the organization’s notes, tasks, calls, meetings and e-mails, newest first by `occurred_at`, optionally only those linked to a deal, contact or company, of a type, or tasks by status and due date; `filter` and `sort` take the query language (docs/api/query.md) over the activity’s fields and `links.type`/`links.id`, ANDed with those parameters. Continue with `after` = `meta.next_cursor`. With `updated_since` (and `include_deleted=true`), a sync: the records changed (and deleted) since, in the order the changes committed, by a cursor that never skips (docs/api/sync.md).',
      },
      scope: 'activities:read',
      agentHint:
        'Use to read what happened with a deal, contact or company (deal_id, contact_id, company_id), or the open tasks due soon (type=task, status=open, due_before).',
      rateLimit: 'crud',
    })
    .input(ActivityListQuery)
    .output(ActivityList)
    .query(({ ctx, input }) => listActivitiesBy(ctx.em, input, ctx.principal.scopes)),

  query: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/activities/query',
        tags,
        summary: 'List activities by a filter in the body',
        description:
          'GET /activities with its parameters in a JSON body, `filter` as an object: for filters too long for a URL. Reads only; the answer is GET /activities’s for the same parameters (docs/api/query.md).',
      },
      scope: 'activities:read',
      agentHint:
        'Use to find activities by conditions on their fields or links (filter: {"and": [{"field": "type", "op": "eq", "value": "task"}, {"field": "status", "op": "eq", "value": "open"}, {"field": "links.id", "op": "eq", "value": "<deal id>"}]}), sorted (sort: "due_at"). Reads only.',
      rateLimit: 'crud',
      readOnly: true,
    })
    .input(ActivityQueryBody)
    .output(ActivityList)
    .mutation(({ ctx, input }) => listActivitiesBy(ctx.em, input, ctx.principal.scopes)),

  create: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/activities',
        tags,
        summary: 'Log an activity (note, task, call, meeting, e-mail)',
        description:
          'Logs an activity linked to 1-50 deals, contacts and companies (`links`) and emits `activity.created`; returns it with 201. A link or participant that is not the organization’s is a 404 naming it (`links[2].id: no deal with this id`). A linked deal’s `last_activity_at` moves to `occurred_at` when that is later and not in the future (a task’s: when it is done). Send `Idempotency-Key` to retry safely.',
        successDescription: 'Created',
      },
      scope: 'activities:write',
      agentHint:
        'Use to log a call, meeting, e-mail or note, or to create a task, on a deal and its contacts at once: put every record it concerns in links (one call, not one per record). Pass idempotency_key when you may retry.',
      idempotencyKey: true,
      successStatus: 201,
      rateLimit: 'crud',
    })
    .input(ActivityCreateInput)
    .output(dataOf(LoggedActivity))
    .mutation(({ ctx, input }) =>
      transaction(ctx.em, async (tx) => ({ data: await createActivity(ctx, tx, input) })),
    ),

  batch: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/activities/batch',
        tags,
        summary: 'Log up to 100 activities at once',
        description:
          'Logs every activity of `items` (each the body of POST /activities) in one transaction: all or nothing, each emitting `activity.created`. An item that fails fails the call with its index (`items[2].links[0].id: …`). Each item counts as one API call against the monthly quota. Send `Idempotency-Key` to retry safely. Returns the activities with 201, in the order given.',
        successDescription: 'Created',
      },
      scope: 'activities:write',
      agentHint:
        'Use to log many activities at once (an import of call logs): up to 100 per call, all or nothing.',
      idempotencyKey: true,
      successStatus: 201,
      rateLimit: 'crud',
    })
    .input(batchOf(ActivityCreateInput))
    .output(dataOf(z.array(LoggedActivity)))
    .mutation(({ ctx, input }) => createBatch(ctx, input, (em, item) => createActivity(ctx, em, item))),

  get: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/activities/{id}',
        tags,
        summary: 'A logged activity',
        description: 'Returns the activity with its links and participants. An unknown activity is a 404.',
      },
      scope: 'activities:read',
      agentHint: 'Use to read one logged activity in full (its body).',
    })
    .input(IdParam)
    .output(dataOf(LoggedActivity))
    .query(async ({ ctx, input }) => ({ data: await activityDto(ctx.em, input.id) })),

  update: authedProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/activities/{id}',
        tags,
        summary: 'Change an activity (mark a task done)',
        description:
          'Changes the fields sent (`null` clears `body` or `due_at`); `links` and `participants` replace the current ones. A task’s `status` done records `completed_at` (and moves its deals’ `last_activity_at`), open clears it. Task fields on another type, or `occurred_at` on a task, are a 400 naming the field. Emits `activity.updated` with the changes when anything changed.',
      },
      scope: 'activities:write',
      agentHint:
        'Use to mark a task done (status: done), reschedule it (due_at), or correct a logged activity.',
    })
    .input(ActivityUpdateInput)
    .output(dataOf(LoggedActivity))
    .mutation(({ ctx, input: { id, ...fields } }) =>
      transaction(ctx.em, async (tx) => ({ data: await updateActivity(ctx, tx, id, fields) })),
    ),

  delete: authedProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/activities/{id}',
        tags,
        summary: 'Delete a logged activity',
        description:
          'Deletes the activity and its links and returns `{"success": true}`; the deals’ `last_activity_at` stays. An unknown activity is a 404.',
      },
      scope: 'activities:write',
      agentHint: 'Deletes a logged activity for good. Only when the user asks for deletion explicitly.',
    })
    .input(IdParam)
    .output(SuccessResponse)
    .mutation(async ({ ctx, input }) => {
      await transaction(ctx.em, (tx) => deleteActivity(tx, input.id));
      return { success: true as const };
    }),

  timeline: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/deals/{id}/timeline',
        tags,
        summary: 'A deal’s timeline: activities, stage and field changes, analyses',
        description:
          'Returns the deal’s history newest first, one entry per `kind`: `activity` (a logged activity linked to the deal, at its `occurred_at`), `stage_change` and `field_change` (the deal’s own changes), `analysis` (an AI analysis). Each entry has `kind`, `id` and `at`; continue with `after` = `meta.next_cursor`. An unknown deal is a 404.',
      },
      scope: 'activities:read',
      agentHint:
        'Use to read everything that happened on a deal, in order: calls, notes, stage moves, analyses.',
      rateLimit: 'crud',
    })
    .input(TimelineQuery)
    .output(Timeline)
    .query(({ ctx, input }) => dealTimeline(ctx.em, input)),
});
