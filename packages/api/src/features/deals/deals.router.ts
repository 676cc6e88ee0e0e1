import { transaction } from '@crm/db';
import { withIdempotency } from '../../idempotency.ts';
import { dataOf, IdParam, SuccessResponse } from '../../schemas.ts';
import { authedProcedure, router } from '../../trpc.ts';
import { emitDealUpdateEvents } from './deal.events.ts';
import { queryDeals } from './deal.queries.ts';
import {
  Deal,
  DealCreateInput,
  DealDetail,
  DealList,
  DealListQuery,
  DealUpdateInput,
} from './deal.schemas.ts';
import { createDeal, dealDto, deleteDeal, getDealDetail, updateDeal } from './deals.service.ts';

const tags = ['Deals'];

export const dealsRouter = router({
  list: authedProcedure
    .meta({
      openapi: { method: 'GET', path: '/deals', tags, summary: 'List deals, newest first' },
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
        successDescription: 'Created',
      },
      successStatus: 201,
      rateLimit: 'crud',
    })
    .input(DealCreateInput)
    .output(dataOf(Deal))
    .mutation(({ ctx, input }) =>
      // createDeal is one statement, atomic on its own.
      withIdempotency(ctx, 'deals.create', input, async (em) => ({
        data: await createDeal(ctx, em, input),
      })),
    ),

  get: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/deals/{id}',
        tags,
        summary: 'A deal with its stakeholders and recent activities',
      },
    })
    .input(IdParam)
    .output(DealDetail)
    .query(async ({ ctx, input }) => ({ data: await getDealDetail(ctx.em, input.id) })),

  update: authedProcedure
    .meta({
      openapi: { method: 'PATCH', path: '/deals/{id}', tags, summary: 'Change some fields of a deal' },
    })
    .input(DealUpdateInput.extend(IdParam.shape))
    .output(dataOf(Deal))
    .mutation(({ ctx, input: { id, ...fields } }) =>
      transaction(ctx.em, async (em) => {
        const update = await updateDeal(em, id, fields);
        const data = await dealDto(em, id);
        await emitDealUpdateEvents(em, data, update);
        return { data };
      }),
    ),

  delete: authedProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/deals/{id}',
        tags,
        summary: 'Delete a deal, its contacts and activities',
      },
    })
    .input(IdParam)
    .output(SuccessResponse)
    .mutation(async ({ ctx, input }) => {
      // One statement (contacts and activities go by ON DELETE CASCADE): atomic without a transaction.
      await deleteDeal(ctx.em, input.id);
      return { success: true as const };
    }),
});
