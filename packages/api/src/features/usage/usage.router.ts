import { z } from 'zod';
import { dataOf } from '../../schemas.ts';
import { authedProcedure, router } from '../../trpc.ts';
import { UsageResponse } from './usage.schemas.ts';
import { usageOf } from './usage.service.ts';

export const usageRouter = router({
  get: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/usage',
        tags: ['Usage'],
        summary: 'This month’s API and AI usage against the quotas, the rate limits, and usage alerts',
      },
    })
    .input(z.void())
    .output(dataOf(UsageResponse))
    .query(async ({ ctx }) => ({ data: await usageOf(ctx) })),
});
