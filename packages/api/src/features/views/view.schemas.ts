import { z } from 'zod';
import { LISTED_OBJECTS } from '../../query/objects.ts';
import { FilterBody, SortParam } from '../../query/schemas.ts';
import { CursorPagination, CursorPaginationMeta, DateTimeOut, ShortText, Text, Uuid } from '../../schemas.ts';

const ViewName = Text()
  .trim()
  .min(1)
  .max(100)
  .describe('Unique among the organization’s views of the same object, case aside');

const ViewObject = z
  .enum(LISTED_OBJECTS)
  .describe('The list the view is of: GET /deals, /contacts, /companies or /activities');

const ViewFilter = FilterBody.describe(
  'The filter tree of the list’s `filter` (docs/api/query.md), checked against the object’s fields as the list checks it',
);
const ViewSort = SortParam.describe(
  'The list’s `sort` (`-value,created_at`), checked as the list checks it; a request’s own `sort` overrides it',
);

export const SavedView = z
  .object({
    id: Uuid,
    name: z.string(),
    object: z.enum(LISTED_OBJECTS),
    filter: z.record(z.string(), z.unknown()).nullable().describe('The filter tree as saved'),
    sort: z.string().nullable(),
    description: z.string().nullable(),
    created_at: DateTimeOut,
    updated_at: DateTimeOut.nullable(),
  })
  .meta({ id: 'SavedView' });
export type SavedViewDto = z.infer<typeof SavedView>;

const EXAMPLE_FILTER = {
  and: [
    { field: 'value', op: 'gte', value: 50000 },
    { field: 'stage_type', op: 'eq', value: 'open' },
  ],
};

export const ViewCreateInput = z
  .strictObject({
    name: ViewName,
    object: ViewObject,
    filter: ViewFilter.optional(),
    sort: ViewSort.optional(),
    description: ShortText.optional(),
  })
  .meta({
    id: 'ViewCreateRequest',
    examples: [{ name: 'Big open deals', object: 'deals', filter: EXAMPLE_FILTER, sort: '-value' }],
  });
export type ViewCreateInput = z.infer<typeof ViewCreateInput>;

export const ViewUpdateInput = z
  .strictObject({
    name: ViewName.optional(),
    filter: ViewFilter.nullable().optional().describe('The new filter tree; null removes it'),
    sort: ViewSort.nullable().optional().describe('The new sort; null removes it (the list’s own order)'),
    description: ShortText.nullable().optional(),
  })
  .meta({
    id: 'ViewUpdateRequest',
    examples: [{ name: 'Big open deals (EMEA)', sort: '-value,created_at' }],
  });
export type ViewUpdateInput = z.infer<typeof ViewUpdateInput>;

export const ViewListQuery = z.strictObject({
  ...CursorPagination,
  object: ViewObject.optional().describe('Only the views of this list'),
});
export type ViewListQuery = z.infer<typeof ViewListQuery>;

export const ViewList = z.object({ data: z.array(SavedView), meta: CursorPaginationMeta });
