import type { Scope } from '../../scopes.ts';
import { authedProcedure } from '../../trpc.ts';
import { DealHistorySummary, History, HistoryQuery } from './history.schemas.ts';
import { dealHistorySummary, type HistoryObject, recordHistory } from './history.service.ts';

const PLURAL = { deal: 'deals', contact: 'contacts', company: 'companies' } as const;

/** `GET /{objects}/{id}/history` of one object, for its router (so its MCP tool is `<objects>-history`). */
function historyProcedure(object: HistoryObject, tag: string) {
  const objects = PLURAL[object];
  return authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: `/${objects}/{id}/history`,
        tags: [tag],
        summary: `Every value a ${object}’s fields held, oldest first`,
        description: `Returns each value the ${object}’s fields (and custom fields, \`custom.<key>\`) held: \`field\`, \`value\`, held \`from\` \`until\` (null while current), the \`actor\` and \`event_id\` (GET /events/{id}) of the change; its creation gives the first values. \`field\` narrows to some fields (comma-separated); an unknown one is a 400 naming the nearest. Continue with \`after\` = \`meta.next_cursor\`. A ${object} that does not exist or belongs to another organization is a 404 (docs/api/history.md).`,
      },
      scope: `${objects}:read` as Scope,
      agentHint: `Use to see how a ${object} changed over time: who changed a field, when, and what it was before (field=… narrows it).`,
      rateLimit: 'crud',
    })
    .input(HistoryQuery)
    .output(History)
    .query(({ ctx, input }) => recordHistory(ctx.em, object, input));
}

export const dealHistoryProcedures = {
  history: historyProcedure('deal', 'Deals'),
  historySummary: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/deals/{id}/history/summary',
        tags: ['Deals'],
        summary: 'Facts from a deal’s history: time in stages, close date moves',
        description:
          'Derived from the deal’s history (GET /deals/{id}/history): the stage it is in and since when, the days it spent in each earlier stage (with the number of visits), and how often its expected close date moved (to a later date: `pushed`; earlier: `pulled_in`). An unknown deal is a 404 (docs/api/history.md).',
      },
      scope: 'deals:read',
      agentHint:
        'Use to judge a deal’s momentum: how long it has sat in its stage, how long earlier stages took, and whether its close date keeps slipping.',
      rateLimit: 'crud',
    })
    .input(HistoryQuery.pick({ id: true }))
    .output(DealHistorySummary)
    .query(async ({ ctx, input }) => ({ data: await dealHistorySummary(ctx.em, input.id) })),
};
export const contactHistoryProcedures = { history: historyProcedure('contact', 'Contacts') };
export const companyHistoryProcedures = { history: historyProcedure('company', 'Companies') };
