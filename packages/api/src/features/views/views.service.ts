import { type EntityManager, sqlOf, type Tables, uuidv7 } from '@crm/db';
import { type Kysely, type SqlBool, sql } from 'kysely';
import type { AuthedContext } from '../../context.ts';
import { ApiError, conflict, notFound } from '../../errors.ts';
import { lockForOrg, orgDb, orgQuery } from '../../org-scope.ts';
import { catalogueOf } from '../../query/fields.ts';
import { checkFilter } from '../../query/filter.ts';
import { LISTS, type ListedObjectName } from '../../query/objects.ts';
import { parseSort } from '../../query/sort.ts';
import { afterAnchor, asJson, checkCursor, isoOf } from '../../read-model.ts';
import type { SavedViewDto, ViewCreateInput, ViewListQuery, ViewUpdateInput } from './view.schemas.ts';

/** Saved views per organization, of all objects together: each is read and checked when a list names it. */
export const MAX_VIEWS_PER_ORG = 500;

const viewRows = (db: Kysely<Tables>) =>
  db
    .selectFrom('saved_views as v')
    .select([
      'v.id',
      'v.name',
      'v.object',
      'v.filter',
      'v.sort',
      'v.description',
      isoOf('v.created_at').as('created_at'),
      isoOf('v.updated_at').as('updated_at'),
    ]);

type ViewRow = Awaited<ReturnType<ReturnType<typeof viewRows>['execute']>>[number];

function toViewDto(row: ViewRow): SavedViewDto {
  return {
    id: row.id,
    name: row.name,
    object: row.object as ListedObjectName,
    filter: row.filter == null ? null : asJson<Record<string, unknown>>(row.filter),
    sort: row.sort ?? null,
    description: row.description ?? null,
    created_at: row.created_at,
    updated_at: row.updated_at ?? null,
  };
}

const oneView = orgQuery((db, a: { id: string }) => viewRows(db).where('v.id', '=', a.id), {
  reusePlan: true,
});

/** The view as the API shows it, or a 404 (another organization's too). */
export async function getView(em: EntityManager, id: string): Promise<SavedViewDto> {
  const [row] = await oneView(em, { id });
  if (!row) throw notFound('View');
  return toViewDto(row);
}

/**
 * A view's filter and sort checked against its object's fields exactly as the list checks its own: every
 * mistake a 400 naming the node by its pointer from the body's `filter` (`filter/and/1/field: …`) or
 * `sort` (`sort/0: …`). Related records' scopes are the caller's of the list, checked where it is applied.
 */
async function checkView(
  em: EntityManager,
  object: ListedObjectName,
  sent: { filter?: unknown; sort?: string | null },
): Promise<void> {
  if (sent.filter == null && sent.sort == null) return;
  const listed = LISTS[object];
  const catalogue = await catalogueOf(em, listed);
  if (sent.filter != null) checkFilter(sent.filter, catalogue, listed.name);
  if (sent.sort != null) parseSort(sent.sort, catalogue);
}

/**
 * Holds the organization's views of `object` while a write checks that no other view of it has the name
 * (case aside): two writers of one name take turns, the second gets the 409 naming the first, never the
 * unique index's bare refusal. Views are written seldom, so one lock per object is enough.
 */
async function claimName(tx: EntityManager, object: string, name: string, self?: string): Promise<void> {
  await lockForOrg(tx, `saved_views.name:${object}`);
  let holder = orgDb(tx)
    .selectFrom('saved_views')
    .select('id')
    .where('object', '=', object)
    .where(sql<SqlBool>`lower(name) = lower(${name})`);
  if (self) holder = holder.where('id', '<>', self);
  const held = await holder.executeTakeFirst();
  if (held) throw conflict(`name: "${name}" is already the name of view ${held.id} of ${object}`, held.id);
}

/** Creates a view (in the caller's transaction), its filter and sort checked first. */
export async function createView(
  ctx: AuthedContext,
  tx: EntityManager,
  input: ViewCreateInput,
): Promise<SavedViewDto> {
  await checkView(tx, input.object, input);
  // Counted under the organization's lock of its views, so concurrent creates cannot pass the limit.
  await lockForOrg(tx, 'saved_views');
  const held = await orgDb(tx)
    .selectFrom('saved_views')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirst();
  if (Number(held?.n ?? 0) >= MAX_VIEWS_PER_ORG)
    throw new ApiError(
      'invalid_request',
      `An organization can have at most ${MAX_VIEWS_PER_ORG} saved views; delete one first`,
    );
  await claimName(tx, input.object, input.name);
  const id = uuidv7();
  await sqlOf(tx)
    .insertInto('saved_views')
    .values({
      id,
      org_id: ctx.principal.orgId,
      name: input.name,
      object: input.object,
      filter: (input.filter === undefined ? null : JSON.stringify(input.filter)) as never,
      sort: input.sort ?? null,
      description: input.description ?? null,
      created_at: new Date(),
    })
    .execute();
  return getView(tx, id);
}

/**
 * Changes what is sent (`null` removes a filter, sort or description), in the caller's transaction. What is
 * sent is checked; what is kept is not, so a view that no longer fits its object can still be renamed or
 * mended. The object does not change: a view of another list is another view.
 */
export async function updateView(
  tx: EntityManager,
  id: string,
  input: Omit<ViewUpdateInput, 'id'>,
): Promise<SavedViewDto> {
  const current = await orgDb(tx)
    .selectFrom('saved_views')
    .select(['id', 'object', 'name'])
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
  if (!current) throw notFound('View');
  const object = current.object as ListedObjectName;
  await checkView(tx, object, input);
  const set: Record<string, unknown> = {};
  if (input.name !== undefined && input.name !== current.name) {
    await claimName(tx, object, input.name, id);
    set.name = input.name;
  }
  if (input.filter !== undefined) set.filter = input.filter === null ? null : JSON.stringify(input.filter);
  if (input.sort !== undefined) set.sort = input.sort;
  if (input.description !== undefined) set.description = input.description;
  if (Object.keys(set).length > 0)
    await orgDb(tx)
      .updateTable('saved_views')
      .set({ ...set, updated_at: new Date() })
      .where('id', '=', id)
      .execute();
  return getView(tx, id);
}

export async function deleteView(em: EntityManager, id: string): Promise<void> {
  const deleted = await orgDb(em).deleteFrom('saved_views').where('id', '=', id).executeTakeFirst();
  if (Number(deleted.numDeletedRows) === 0) throw notFound('View');
}

const viewPage = orgQuery((db, a: { object?: string; after?: string; limit: number; offset: number }) => {
  let page = viewRows(db);
  if (a.object) page = page.where('v.object', '=', a.object);
  if (a.after) page = page.where(afterAnchor({ table: 'saved_views', alias: 'v' }, a.after));
  return page.orderBy('v.created_at', 'desc').orderBy('v.id', 'desc').limit(a.limit).offset(a.offset);
});

const viewCount = orgQuery((db, a: { object?: string }) => {
  let count = db.selectFrom('saved_views').select((eb) => eb.fn.countAll<string>().as('total'));
  if (a.object) count = count.where('object', '=', a.object);
  return count;
});

/** A page of the organization's views, newest first, by `offset` or after a cursor, with the exact total. */
export async function listViews(em: EntityManager, query: ViewListQuery) {
  await checkCursor(em, { table: 'saved_views', what: 'view' }, query);
  const [rows, [counted]] = await Promise.all([
    viewPage(em, { object: query.object, after: query.after, limit: query.limit + 1, offset: query.offset }),
    viewCount(em, { object: query.object }),
  ]);
  const data = rows.slice(0, query.limit).map(toViewDto);
  return {
    data,
    meta: {
      total: Number(counted?.total ?? 0),
      limit: query.limit,
      offset: query.offset,
      next_cursor: rows.length > query.limit ? (data.at(-1)?.id ?? null) : null,
    },
  };
}
