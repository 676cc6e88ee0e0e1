import { authedProcedure, router } from '../../trpc.ts';
import { SearchQuery, SearchResult } from './search.schemas.ts';
import { search } from './search.service.ts';

export const searchRouter = router({
  query: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/search',
        tags: ['Search'],
        summary: 'Search deals, contacts and companies by text',
        description:
          'Returns up to 20 deals whose title or company, and up to 20 contacts whose name, e-mail or title, contains `q` (case-insensitive), best first: a title, company name or contact name equal to `q`, then those beginning with it (alphabetically, then newest first), then the newest of the other matches; and up to 20 companies whose name or domain contains it (`companies`, ranked the same way). `meta` says how many matched in each list, exactly up to `meta.count_bound` (1,000), else "more than" it (`exact: false`). A `q` shorter than 2 characters is a 400.',
      },
      scope: 'search',
      agentHint:
        'Use to find deals, contacts and companies by a name, company, domain or e-mail in one call, when you do not have the id.',
      rateLimit: 'search',
    })
    .input(SearchQuery)
    .output(SearchResult)
    .query(({ ctx, input }) => search(ctx.em, input.q, ctx.services.config.search)),
});
