import { transaction } from '@crm/db';
import { upsertBatch, upsertBatchAnswer, upsertBatchOf } from '../../batch.ts';
import { dataOf, IdParam, SuccessResponse } from '../../schemas.ts';
import { authedProcedure, router } from '../../trpc.ts';
import { dealHistoryProcedures } from '../history/history.router.ts';
import { AsOf } from '../history/history.schemas.ts';
import { dealAsOf } from '../history/history.service.ts';
import { listDeals } from './deal.list.ts';
import {
  Deal,
  DealCreateInput,
  DealDetail,
  DealList,
  DealListQuery,
  DealQueryBody,
  DealUpdateInput,
} from './deal.schemas.ts';
import { createDeal, deleteDeal, getDealDetail, updateDeal } from './deals.service.ts';
import { StakeholderLink, StakeholderLinkInput, StakeholderPath } from './stakeholder.schemas.ts';
import { putStakeholder, removeStakeholder } from './stakeholders.service.ts';

const tags = ['Deals'];

export const dealsRouter = router({
  list: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/deals',
        tags,
        summary: 'List deals, newest first',
        description:
          'Returns a page of the organization’s deals (`limit`, `offset`) with `meta.total`, optionally only those with a `lifecycle_stage` or in a pipeline. `filter` (a JSON tree: any field of the deal, `custom.<key>`, `stakeholders.<field>`) and `sort` (`-value,created_at`) narrow and order it; `meta.total` counts what the filter keeps. An unknown field, an operator or value that does not fit is a 400 naming the node (docs/api/query.md). With `updated_since` (and `include_deleted=true`), a sync: the records changed (and deleted) since, in the order the changes committed, by a cursor that never skips (docs/api/sync.md).',
      },
      scope: 'deals:read',
      agentHint:
        'Use to browse or page through deals (newest first), or to find those in a lifecycle stage or pipeline, or matching a filter (value, stage_type, custom fields, stakeholders’ roles) in a sort order; for a deal you know by name, search is quicker. Returns deals with stage, value and dates, and meta.total.',
      rateLimit: 'crud',
    })
    .input(DealListQuery)
    .output(DealList)
    .query(({ ctx, input }) => listDeals(ctx.em, input, ctx.principal.scopes)),

  query: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/deals/query',
        tags,
        summary: 'List deals by a filter in the body',
        description:
          'GET /deals with its parameters in a JSON body, `filter` as an object: for filters too long for a URL. Reads only; the answer is GET /deals’s for the same parameters (docs/api/query.md).',
      },
      scope: 'deals:read',
      agentHint:
        'Use to find deals by conditions on any of their fields, custom fields or stakeholders (filter: {"and": [{"field": "value", "op": "gte", "value": 10000}, {"field": "stage_type", "op": "eq", "value": "open"}]}), sorted (sort: "-value"). Reads only. Returns deals and meta.total (the exact number matching).',
      rateLimit: 'crud',
      readOnly: true,
    })
    .input(DealQueryBody)
    .output(DealList)
    .mutation(({ ctx, input }) => listDeals(ctx.em, input, ctx.principal.scopes)),

  create: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/deals',
        tags,
        summary: 'Create a deal',
        description:
          'Creates a deal in the first stage of its pipeline (the default one unless `pipeline_id` is given) or in `stage_id`, records a `deal_created` activity and emits `deal.created`; returns the deal with 201. A stage outside the pipeline is a 400; send `Idempotency-Key` to retry safely.',
        successDescription: 'Created',
      },
      scope: 'deals:write',
      agentHint:
        "Use to record a new sales opportunity. Only title is required; it lands in the pipeline's first stage unless stage_id is given. Pass idempotency_key when you may retry. Returns the created deal.",
      idempotencyKey: true,
      successStatus: 201,
      rateLimit: 'crud',
      errors: ['conflict'],
    })
    .input(DealCreateInput)
    .output(dataOf(Deal))
    // createDeal is one statement, atomic on its own.
    .mutation(async ({ ctx, input }) => ({ data: await createDeal(ctx, ctx.em, input) })),

  batch: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/deals/batch',
        tags,
        summary: 'Create up to 100 deals at once',
        description:
          'Creates every deal of `items` (each the body of POST /deals) in one transaction: all or nothing. Each records its `deal_created` activity and emits `deal.created`, as a single create does; an item that fails fails the call with its index (`items[3].title: Required`). Each item counts as one API call against the monthly quota; a batch the quota cannot take answers 429 and creates nothing. Send `Idempotency-Key` to retry safely. Returns the deals with 201, in the order given. With `?upsert_on=<a unique custom field>`, an item whose value of that field a deal holds changes that deal instead (its fields sent, as a PATCH, with `deal.updated`), and `meta.results` says for each item whether it was `created` or `updated`.',
        successDescription: 'Created',
      },
      scope: 'deals:write',
      agentHint:
        'Use to load many deals at once (an import, a migration): up to 100 per call, all or nothing. Pass idempotency_key when you may retry.',
      idempotencyKey: true,
      successStatus: 201,
      rateLimit: 'crud',
      errors: ['conflict'],
      query: ['upsert_on'],
    })
    .input(upsertBatchOf(DealCreateInput, 'a deal'))
    .output(upsertBatchAnswer(Deal))
    .mutation(({ ctx, input }) =>
      upsertBatch(ctx, 'deals', input, {
        create: (em, item) => createDeal(ctx, em, item),
        update: (em, id, item) => updateDeal(em, id, item),
      }),
    ),

  get: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/deals/{id}',
        tags,
        summary: 'A deal with its stakeholders and recent activities',
        description:
          'Returns the deal, its stakeholders (the deal’s contacts) and its 20 most recent activities, newest first. A deal that does not exist or belongs to another organization is a 404. With `as_of`, the deal’s fields are as they were then (stakeholders and activities as they are now; docs/api/history.md).',
      },
      scope: 'deals:read',
      agentHint:
        'Use before discussing or changing one deal: returns the deal, its stakeholders and its 20 latest activities.',
    })
    .input(IdParam.extend({ as_of: AsOf }))
    .output(DealDetail)
    .query(async ({ ctx, input }) => {
      const detail = await getDealDetail(ctx.em, input.id);
      return { data: input.as_of ? await dealAsOf(ctx.em, detail, input.id, input.as_of) : detail };
    }),

  update: authedProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/deals/{id}',
        tags,
        summary: 'Change some fields of a deal',
        description:
          'Changes the fields sent and leaves the others alone (`null` clears one; `lifecycle_stage: null` makes it follow the stage again), records the changes as activities and emits `deal.updated`, plus `deal.stage_changed`, `deal.won` or `deal.lost` on a stage move; returns the deal. 404 for an unknown deal, 400 for a stage outside its pipeline.',
      },
      scope: 'deals:write',
      agentHint:
        'Use to change fields of one deal or move it to another stage (stage_id); send only the fields to change. Returns the updated deal.',
      errors: ['conflict'],
    })
    // Adding the path's id drops the body schema's meta: its examples are given again for the document.
    .input(DealUpdateInput.extend(IdParam.shape).meta({ examples: DealUpdateInput.meta()?.examples }))
    .output(dataOf(Deal))
    .mutation(async ({ ctx, input: { id, ...fields } }) => ({ data: await updateDeal(ctx.em, id, fields) })),

  delete: authedProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/deals/{id}',
        tags,
        summary: 'Delete a deal, its contacts and activities',
        description:
          'Deletes the deal together with its contacts and activities and returns `{"success": true}`. An unknown deal is a 404.',
      },
      scope: 'deals:write',
      agentHint:
        'Deletes a deal with its contacts and activities, for good. Only when the user asks for deletion explicitly.',
    })
    .input(IdParam)
    .output(SuccessResponse)
    .mutation(async ({ ctx, input }) => {
      // One statement (contacts and activities go by ON DELETE CASCADE): atomic without a transaction.
      await deleteDeal(ctx.em, input.id);
      return { success: true as const };
    }),

  linkStakeholder: authedProcedure
    .meta({
      openapi: {
        method: 'PUT',
        path: '/deals/{id}/stakeholders/{contact_id}',
        tags,
        summary: 'Put a contact on a deal with a role',
        description:
          'Links the contact to the deal with the role sent (`role_type`, `influence_level`, `engagement_level`, `sentiment`, `is_primary`), or changes its link’s role (only the fields sent); calling it again with the same body changes nothing. A new link records a `stakeholder_added` activity and emits `deal.stakeholder_added`. On the contact’s own deal (its `deal_id`) the role is the contact’s own fields, changed as PATCH /contacts/{id} changes them. A deal has at most one economic buyer and one primary contact: another one is a 409 `conflict` naming the holder (`conflicting_id`). An unknown deal or contact is a 404.',
      },
      scope: 'deals:write',
      agentHint:
        'Use to put a contact on a deal (a champion on one deal can be an influencer on another) or change their role on it.',
      errors: ['conflict'],
    })
    .input(
      StakeholderLinkInput.extend(StakeholderPath.shape).meta({
        examples: StakeholderLinkInput.meta()?.examples,
      }),
    )
    .output(dataOf(StakeholderLink))
    .mutation(({ ctx, input: { id, contact_id, ...fields } }) =>
      transaction(ctx.em, async (tx) => ({ data: await putStakeholder(tx, id, contact_id, fields) })),
    ),

  unlinkStakeholder: authedProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/deals/{id}/stakeholders/{contact_id}',
        tags,
        summary: 'Take a contact off a deal',
        description:
          'Removes the contact’s link to the deal (a `stakeholder_removed` activity, `deal.stakeholder_removed`) and returns `{"success": true}`; a link that is not there is nothing to remove (also `{"success": true}`). The contact’s own deal is no link: a 409 (delete the contact instead). An unknown deal or contact is a 404.',
      },
      scope: 'deals:write',
      agentHint: 'Use to take a contact off a deal they were linked to.',
      errors: ['conflict'],
    })
    .input(StakeholderPath)
    .output(SuccessResponse)
    .mutation(async ({ ctx, input }) => {
      await transaction(ctx.em, (tx) => removeStakeholder(tx, input.id, input.contact_id));
      return { success: true as const };
    }),

  ...dealHistoryProcedures,
});
