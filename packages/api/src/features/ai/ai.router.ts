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
        description:
          'Scores the deal on the eight MEDDPICC pillars from its data, with risks, win factors, recommended actions and readiness for the next stage; stores the analysis, sets the deal’s `deal_health` and `win_probability` and emits `analysis.completed`. Counts against the AI quota; an unknown deal is a 404.',
      },
      scope: 'ai',
      agentHint:
        "Use when asked how healthy a deal is or what is missing: a MEDDPICC analysis with risks, win factors and next actions. Stores the analysis and updates the deal's health. Uses the AI quota.",
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
        description:
          'Returns the deal’s win probability (0-100) with a confidence, the factors for and against it and up to three recommendations, learned from the organization’s own closed deals once there are enough. Counts against the AI quota; an unknown deal is a 404.',
      },
      scope: 'ai',
      agentHint:
        'Use when asked how likely a deal is to close: win probability with confidence and the factors for and against. Uses the AI quota.',
      rateLimit: 'ai',
    })
    .input(IdParam)
    .output(PredictionResponse)
    .mutation(async ({ ctx, input }) => ({ data: await predictDeal(ctx, input.id) })),

  briefing: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/briefing',
        tags,
        summary: 'Daily briefing on the open pipeline',
        description:
          'Returns the open pipeline’s totals, the deals closing this week, the stale and the at-risk deals (up to 10 each, with the reason) and the last 7 days’ signals. Counts against the AI quota.',
      },
      scope: 'ai',
      agentHint:
        'Use at the start of a day or a pipeline review: totals, deals closing this week, stale and at-risk deals, recent signals. Uses the AI quota.',
      rateLimit: 'ai',
    })
    .input(z.void())
    .output(BriefingResponse)
    .query(async ({ ctx }) => ({ data: await dailyBriefing(ctx) })),

  coaching: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/coaching',
        tags,
        summary: 'Coaching from recent win/loss patterns',
        description:
          'Returns the win rate, won and lost counts and average cycle of the deals closed in the last 90 days, with tips from the traits that differ between won and lost deals (at least 3 of each needed). Counts against the AI quota.',
      },
      scope: 'ai',
      agentHint:
        'Use for a coaching review of the sales team: per-owner patterns and suggestions. Uses the AI quota.',
      rateLimit: 'ai',
    })
    .input(z.void())
    .output(CoachingResponse)
    .query(async ({ ctx }) => ({ data: await coaching(ctx) })),
});
