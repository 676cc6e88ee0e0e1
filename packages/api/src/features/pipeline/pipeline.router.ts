import { z } from 'zod';
import { dataOf } from '../../schemas.ts';
import { authedProcedure, router } from '../../trpc.ts';
import { PipelineHealth, PipelineStage } from './pipeline.schemas.ts';
import { listDefaultStages, pipelineHealth } from './pipeline.service.ts';

const tags = ['Pipeline'];

export const pipelineRouter = router({
  stages: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/pipeline/stages',
        tags,
        summary: 'Stages of the default pipeline, in order',
      },
    })
    .input(z.void())
    .output(dataOf(z.array(PipelineStage)))
    .query(async ({ ctx }) => ({ data: await listDefaultStages(ctx.em) })),

  health: authedProcedure
    .meta({
      openapi: { method: 'GET', path: '/pipeline/health', tags, summary: 'Health of the open pipeline' },
    })
    .input(z.void())
    .output(dataOf(PipelineHealth))
    .query(async ({ ctx }) => ({
      data: await pipelineHealth(ctx.em, ctx.services.config.staleThresholdDays),
    })),
});
