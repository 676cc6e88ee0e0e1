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
        description:
          'Returns the API and AI calls of the current UTC month against the organization’s quotas, each rate-limit group’s limit and window, and the alerts recorded when a quota reached 80 % or 95 %. This call counts too.',
      },
      scope: 'usage:read',
      agentHint: "Use to check how much of this month's API and AI quota is left before a long task.",
    })
    .input(z.void())
    .output(dataOf(UsageResponse))
    .query(async ({ ctx }) => ({ data: await usageOf(ctx) })),
});
