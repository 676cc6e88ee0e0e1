import { z } from 'zod';
import { dataOf, IdParam, SuccessResponse } from '../../schemas.ts';
import { authedProcedure, router } from '../../trpc.ts';
import {
  Pipeline,
  PipelineCreateInput,
  PipelineUpdateInput,
  Stage,
  StageCreateInput,
  StageDeleteInput,
  StageDeleteResult,
  StageUpdateInput,
} from './pipeline.schemas.ts';
import {
  createPipeline,
  createStage,
  deletePipeline,
  deleteStage,
  getPipeline,
  listPipelines,
  updatePipeline,
  updateStage,
} from './pipelines.service.ts';

const tags = ['Pipeline'];

/**
 * An organization's pipelines and their stages (docs/api/pipelines.md). Each write is one transaction;
 * GET /pipeline/stages (pipeline.router.ts) keeps answering the default pipeline's stages as it did.
 */
export const pipelinesRouter = router({
  list: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/pipelines',
        tags,
        summary: 'Every pipeline with its stages',
        description:
          'Returns the organization’s pipelines, the default first, then oldest first, each with its stages in order (each stage with its `deal_count`).',
      },
      scope: 'pipeline:read',
      agentHint:
        'Use to learn which pipelines exist and their stage ids (for pipeline_id and stage_id on deals, or pipeline_id on health).',
    })
    .input(z.void())
    .output(dataOf(z.array(Pipeline)))
    .query(async ({ ctx }) => ({ data: await listPipelines(ctx.em) })),

  create: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/pipelines',
        tags,
        summary: 'Create a pipeline with its stages',
        description:
          'Creates a pipeline with the `stages` given, in that order (at least one), and returns it with 201. `is_default: true` makes it the default pipeline in place of the one before. At most 100 pipelines per organization and 50 stages per pipeline (409 `conflict` beyond).',
        successDescription: 'Created',
      },
      scope: 'pipeline:write',
      agentHint:
        'Use only when the user asks for a new pipeline (a separate sales process). Give its stages in order; won and lost stages close deals.',
      successStatus: 201,
      errors: ['conflict'],
    })
    .input(PipelineCreateInput)
    .output(dataOf(Pipeline))
    .mutation(async ({ ctx, input }) => ({ data: await createPipeline(ctx.em, input) })),

  get: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/pipelines/{id}',
        tags,
        summary: 'A pipeline with its stages',
        description:
          'Returns the pipeline with its stages in order. A pipeline that does not exist or belongs to another organization is a 404.',
      },
      scope: 'pipeline:read',
      agentHint: 'Use to read one pipeline’s stages (ids, order, type, probability, deals in each).',
    })
    .input(IdParam)
    .output(dataOf(Pipeline))
    .query(async ({ ctx, input }) => ({ data: await getPipeline(ctx.em, input.id) })),

  update: authedProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/pipelines/{id}',
        tags,
        summary: 'Rename a pipeline or make it the default',
        description:
          'Changes the `name`, or with `is_default: true` makes the pipeline the default one (GET /pipeline/stages answers it, deals without a pipeline_id go to it). `is_default: false` on the default pipeline is a 409: make another one the default instead. Returns the pipeline.',
      },
      scope: 'pipeline:write',
      agentHint: 'Use to rename a pipeline or to make it the default one, when the user asks.',
      errors: ['conflict'],
    })
    .input(PipelineUpdateInput)
    .output(dataOf(Pipeline))
    .mutation(async ({ ctx, input }) => ({ data: await updatePipeline(ctx.em, input) })),

  delete: authedProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/pipelines/{id}',
        tags,
        summary: 'Delete an empty pipeline',
        description:
          'Deletes the pipeline and its stages and returns `{"success": true}`. The default pipeline is a 409, and so is a pipeline any deal is in (the message gives their count): move or delete those deals first.',
      },
      scope: 'pipeline:write',
      agentHint:
        'Deletes a pipeline with its stages, for good; only when the user asks explicitly. It must hold no deals and not be the default.',
      errors: ['conflict'],
    })
    .input(IdParam)
    .output(SuccessResponse)
    .mutation(async ({ ctx, input }) => {
      await deletePipeline(ctx.em, input.id);
      return { success: true as const };
    }),

  createStage: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/pipelines/{id}/stages',
        tags,
        summary: 'Add a stage to a pipeline',
        description:
          'Adds a stage at `position` (the stages from there on move down one) or at the end, and returns it with 201. `stage_type` is open unless given; a won or lost stage is closed.',
        successDescription: 'Created',
      },
      scope: 'pipeline:write',
      agentHint: 'Use to add a stage to a pipeline when the user asks.',
      successStatus: 201,
      errors: ['conflict'],
    })
    .input(StageCreateInput)
    .output(dataOf(Stage))
    .mutation(async ({ ctx, input }) => ({ data: await createStage(ctx.em, input) })),

  updateStage: authedProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/pipelines/{id}/stages/{stage_id}',
        tags,
        summary: 'Change or move a stage',
        description:
          'Changes the fields sent; `position` moves the stage there and the others shift, so positions stay 1, 2, … without gaps. `stage_type` changes only on a stage no deal is in (409 otherwise). Deals keep their stage and lifecycle_stage. Returns the stage.',
      },
      scope: 'pipeline:write',
      agentHint: 'Use to rename, recolour, reorder or re-weight a stage when the user asks.',
      errors: ['conflict'],
    })
    .input(StageUpdateInput)
    .output(dataOf(Stage))
    .mutation(async ({ ctx, input }) => ({ data: await updateStage(ctx.em, input) })),

  deleteStage: authedProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/pipelines/{id}/stages/{stage_id}',
        tags,
        summary: 'Delete a stage, moving its deals',
        description:
          'Deletes the stage; the stages after it move up one. A stage that deals are in needs `move_to`, another stage of the same pipeline (409 naming their count otherwise): each deal moves there as a PATCH of its `stage_id` would move it, with its `stage_changed` activity and its `deal.updated`, `deal.stage_changed` (and `deal.won` or `deal.lost`) events, all in one transaction. A pipeline keeps at least one stage (409). Returns how many deals moved.',
      },
      scope: 'pipeline:write',
      agentHint:
        'Deletes a stage for good; only when the user asks explicitly. If deals are in it, ask the user which stage they should move to and pass it as move_to.',
      errors: ['conflict'],
    })
    .input(StageDeleteInput)
    .output(StageDeleteResult)
    .mutation(async ({ ctx, input }) => ({ success: true as const, ...(await deleteStage(ctx.em, input)) })),
});
