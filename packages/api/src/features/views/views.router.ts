import { transaction } from '@crm/db';
import { dataOf, IdParam, SuccessResponse } from '../../schemas.ts';
import { authedProcedure, router } from '../../trpc.ts';
import { SavedView, ViewCreateInput, ViewList, ViewListQuery, ViewUpdateInput } from './view.schemas.ts';
import { createView, deleteView, getView, listViews, updateView } from './views.service.ts';

const tags = ['Views'];

/**
 * Saved views (docs/api/query.md, Saved views): a named filter and sort of one list, applied by
 * `GET /{object}?view=<id>` (and `view` in POST /{object}/query). Their own scopes, `views:read` and
 * `views:write`; applying one needs only the list's. No events: a view is a way of reading, not a record.
 */
export const viewsRouter = router({
  list: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/views',
        tags,
        summary: 'List saved views, newest first',
        description:
          'Returns a page of the organization’s saved views (`limit`, `offset`, or `after` a cursor) with `meta.total`; `object` keeps the views of one list (deals, contacts, companies, activities).',
      },
      scope: 'views:read',
      agentHint:
        'Use to find the saved views (named filters) of the organization, to apply one to a list with view=<id>.',
      rateLimit: 'crud',
    })
    .input(ViewListQuery)
    .output(ViewList)
    .query(({ ctx, input }) => listViews(ctx.em, input)),

  create: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/views',
        tags,
        summary: 'Save a view: a named filter and sort of one list',
        description:
          'Saves `filter` (the list’s filter tree) and `sort` under `name` for one `object` (deals, contacts, companies or activities) and returns the view with 201; `GET /{object}?view=<id>` then applies them. Both are checked against the object’s fields exactly as the list checks its own: a mistake is a 400 naming the node (`filter/and/1/field: unknown field …`, `sort/0: …`). A name another view of the same object has (case aside) is a 409 naming it (`conflicting_id`). Not idempotent: a retried create with another name makes a second view.',
        successDescription: 'Created',
      },
      scope: 'views:write',
      agentHint:
        'Use to save a filter the user wants to reuse under a name (a "view"): then list with view=<id>.',
      errors: ['conflict'],
      successStatus: 201,
      rateLimit: 'crud',
    })
    .input(ViewCreateInput)
    .output(dataOf(SavedView))
    .mutation(({ ctx, input }) =>
      transaction(ctx.em, async (tx) => ({ data: await createView(ctx, tx, input) })),
    ),

  get: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/views/{id}',
        tags,
        summary: 'A saved view',
        description:
          'Returns the view: its object, filter tree, sort and description. An unknown view is a 404.',
      },
      scope: 'views:read',
      agentHint: 'Use to read what a saved view filters by.',
    })
    .input(IdParam)
    .output(dataOf(SavedView))
    .query(async ({ ctx, input }) => ({ data: await getView(ctx.em, input.id) })),

  update: authedProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/views/{id}',
        tags,
        summary: 'Change a saved view’s name, filter, sort or description',
        description:
          'Changes what is sent (`null` removes the filter, the sort or the description) and returns the view; what is sent is checked as at creation (a 400 naming the node). The object does not change. A name another view of the object has is a 409; an unknown view is a 404.',
      },
      scope: 'views:write',
      agentHint: 'Use to change what a saved view filters by, or its name.',
      errors: ['conflict'],
    })
    .input(ViewUpdateInput.extend(IdParam.shape).meta({ examples: ViewUpdateInput.meta()?.examples }))
    .output(dataOf(SavedView))
    .mutation(({ ctx, input: { id, ...fields } }) =>
      transaction(ctx.em, async (tx) => ({ data: await updateView(tx, id, fields) })),
    ),

  delete: authedProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/views/{id}',
        tags,
        summary: 'Delete a saved view',
        description:
          'Deletes the view and returns `{"success": true}`; a list given its id answers 400 from then on. The records it filtered are not touched. An unknown view is a 404.',
      },
      scope: 'views:write',
      agentHint: 'Deletes a saved view (not the records it lists). Only when the user asks for it.',
    })
    .input(IdParam)
    .output(SuccessResponse)
    .mutation(async ({ ctx, input }) => {
      await transaction(ctx.em, (tx) => deleteView(tx, input.id));
      return { success: true as const };
    }),
});
