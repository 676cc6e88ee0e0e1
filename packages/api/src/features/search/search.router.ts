import { dataOf } from '../../schemas.ts';
import { authedProcedure, router } from '../../trpc.ts';
import { SearchQuery, SearchResponse } from './search.schemas.ts';
import { search } from './search.service.ts';

export const searchRouter = router({
  query: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/search',
        tags: ['Search'],
        summary: 'Search deals and contacts by text',
        description:
          'Returns up to 20 deals whose title or company, and up to 20 contacts whose name, e-mail or title, contains `q` (case-insensitive), newest first. A `q` shorter than 2 characters is a 400.',
      },
      scope: 'search',
      agentHint:
        'Use to find deals and contacts by a name, company or e-mail in one call, when you do not have the id.',
      rateLimit: 'search',
    })
    .input(SearchQuery)
    .output(dataOf(SearchResponse))
    .query(async ({ ctx, input }) => ({ data: await search(ctx.em, input.q, ctx.services.config.search) })),
});
