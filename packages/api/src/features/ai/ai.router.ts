import { z } from 'zod';
import { IdParam } from '../../schemas.ts';
import { authedProcedure, router } from '../../trpc.ts';
import { AnalysisResponse, BriefingResponse, CoachingResponse, PredictionResponse } from './ai.schemas.ts';
import { analyzeDeal } from './analysis.service.ts';
import { dailyBriefing } from './briefing.service.ts';
import { coaching } from './coaching.service.ts';
import { predictDeal } from './prediction.service.ts';

const tags = ['AI insights'];

export const aiRouter = router({
  analyze: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/deals/{id}/analyze',
        tags,
        summary: 'MEDDPICC analysis of a deal; stores it, updates deal_health and emits analysis.completed',
      },
      rateLimit: 'ai',
    })
    .input(IdParam)
    .output(AnalysisResponse)
    .mutation(async ({ ctx, input }) => ({ data: await analyzeDeal(ctx, input.id) })),

  predict: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/deals/{id}/predict',
        tags,
        summary: 'Win probability of a deal with its confidence, factors and recommendations',
      },
      rateLimit: 'ai',
    })
    .input(IdParam)
    .output(PredictionResponse)
    .mutation(async ({ ctx, input }) => ({ data: await predictDeal(ctx, input.id) })),

  briefing: authedProcedure
    .meta({
      openapi: { method: 'GET', path: '/briefing', tags, summary: 'Daily briefing on the open pipeline' },
      rateLimit: 'ai',
    })
    .input(z.void())
    .output(BriefingResponse)
    .query(async ({ ctx }) => ({ data: await dailyBriefing(ctx) })),

  coaching: authedProcedure
    .meta({
      openapi: { method: 'GET', path: '/coaching', tags, summary: 'Coaching from recent win/loss patterns' },
      rateLimit: 'ai',
    })
    .input(z.void())
    .output(CoachingResponse)
    .query(async ({ ctx }) => ({ data: await coaching(ctx) })),
});
