import { z } from 'zod';
import { dataOf } from '../../schemas.ts';
import { authedProcedure, router } from '../../trpc.ts';
import { UsageLimits, UsageResponse } from './usage.schemas.ts';
import { usageLimits, usageOf } from './usage.service.ts';

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
  limits: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/usage/limits',
        tags: ['Usage'],
        summary: 'How much of each limit on the organization’s schema and settings is used',
        description:
          'Returns, for each limit on what the organization keeps, how much is used: custom fields per object (200), the options of its largest select (500), pipelines (100), the stages of its largest pipeline (50), webhook endpoints (100), saved views (500). The 32 KB of custom values per record is given as a limit only: each write checks it (docs/api/limits.md).',
      },
      scope: 'usage:read',
      agentHint: 'Use before adding custom fields, select options, pipelines or webhooks in bulk.',
    })
    .input(z.void())
    .output(dataOf(UsageLimits))
    .query(async ({ ctx }) => ({ data: await usageLimits(ctx.em) })),
});
