import { z } from 'zod';
import { dataOf } from '../../schemas.ts';
import { authedProcedure, router } from '../../trpc.ts';
import { PipelineHealth, PipelineHealthQuery, PipelineStage } from './pipeline.schemas.ts';
import { listDefaultStages, pipelineHealth } from './pipeline.service.ts';
import { requirePipeline } from './pipelines.service.ts';

const tags = ['Pipeline'];

export const pipelineRouter = router({
  stages: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/pipeline/stages',
        tags,
        summary: 'Stages of the default pipeline, in order',
        description:
          'Returns the stages of the organization’s default pipeline by position, each with its `stage_type` (open, won or lost), win probability and color.',
      },
      scope: 'pipeline:read',
      agentHint: 'Use to learn the stage ids and names before creating or moving deals.',
    })
    .input(z.void())
    .output(dataOf(z.array(PipelineStage)))
    .query(async ({ ctx }) => ({ data: await listDefaultStages(ctx.em) })),

  health: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/pipeline/health',
        tags,
        summary: 'Health of the open pipeline',
        description:
          'Counts the open deals that are healthy, stale (idle for more than `stale_threshold_days`), in need of a next step soon, or critical (past their close date or idle for twice the threshold): those of every pipeline of the organization, or of the one `pipeline_id` names (404 for an unknown one).',
      },
      scope: 'pipeline:read',
      agentHint:
        'Use for an overview of the open pipeline: deals and value per stage, stale deals, weighted value. Pass pipeline_id for one pipeline only.',
      errors: ['not_found'],
    })
    .input(PipelineHealthQuery)
    .output(dataOf(PipelineHealth))
    .query(async ({ ctx, input }) => {
      const pipelineId = input?.pipeline_id;
      if (pipelineId) await requirePipeline(ctx.em, pipelineId);
      return { data: await pipelineHealth(ctx.em, ctx.services.config.staleThresholdDays, pipelineId) };
    }),
});
