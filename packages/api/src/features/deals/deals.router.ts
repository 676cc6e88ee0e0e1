import { z } from 'zod';
import { batchOf, createBatch } from '../../batch.ts';
import { dataOf, IdParam, SuccessResponse } from '../../schemas.ts';
import { authedProcedure, router } from '../../trpc.ts';
import { FieldKey } from '../custom-fields/custom-field.schemas.ts';
import { upsertField } from '../custom-fields/custom-fields.service.ts';
import { queryDeals } from './deal.queries.ts';
import {
  Deal,
  DealCreateInput,
  DealDetail,
  DealList,
  DealListQuery,
  DealUpdateInput,
} from './deal.schemas.ts';
import { createDeal, deleteDeal, getDealDetail, updateDeal, upsertDeal } from './deals.service.ts';

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
          'Returns a page of the organization’s deals (`limit`, `offset`) with `meta.total`, optionally only those with a `lifecycle_stage` or in a pipeline.',
      },
      scope: 'deals:read',
      agentHint:
        'Use to browse or page through deals (newest first), or to find those in a lifecycle stage or pipeline; for a deal you know by name, search is quicker. Returns deals with stage, value and dates, and meta.total.',
      rateLimit: 'crud',
    })
    .input(DealListQuery)
    .output(DealList)
    .query(({ ctx, input }) => queryDeals(ctx.em, input)),

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
    .input(
      batchOf(DealCreateInput)
        .extend({
          upsert_on: FieldKey.optional().describe(
            'A unique custom field: an item whose value of it a deal holds changes that deal (only the fields sent), the others are created; `meta.results` says which',
          ),
        })
        .meta({ examples: batchOf(DealCreateInput).meta()?.examples }),
    )
    .output(
      dataOf(z.array(Deal)).extend({
        meta: z
          .object({
            upserted_on: z.string(),
            results: z.array(z.enum(['created', 'updated'])).describe('What became of each item, in order'),
          })
          .optional()
          .describe('With upsert_on only'),
      }),
    )
    .mutation(async ({ ctx, input: { upsert_on, ...batch } }) => {
      if (upsert_on === undefined) return createBatch(ctx, batch, (em, item) => createDeal(ctx, em, item));
      const rule = await upsertField(ctx.em, 'deals', upsert_on);
      const results: Array<'created' | 'updated'> = [];
      const done = await createBatch(ctx, batch, async (em, item) => {
        const { deal, action } = await upsertDeal(ctx, em, rule, item);
        results.push(action);
        return deal;
      });
      return { ...done, meta: { upserted_on: upsert_on, results } };
    }),

  get: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/deals/{id}',
        tags,
        summary: 'A deal with its stakeholders and recent activities',
        description:
          'Returns the deal, its stakeholders (the deal’s contacts) and its 20 most recent activities, newest first. A deal that does not exist or belongs to another organization is a 404.',
      },
      scope: 'deals:read',
      agentHint:
        'Use before discussing or changing one deal: returns the deal, its stakeholders and its 20 latest activities.',
    })
    .input(IdParam)
    .output(DealDetail)
    .query(async ({ ctx, input }) => ({ data: await getDealDetail(ctx.em, input.id) })),

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
});
