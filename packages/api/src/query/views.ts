import type { EntityManager } from '@crm/db';
import { ApiError } from '../errors.ts';
import { orgQuery } from '../org-scope.ts';
import { asJson } from '../read-model.ts';

/** A saved view as a list applies it (docs/api/query.md, Saved views). */
export interface AppliedView {
  id: string;
  name: string;
  /** The tree as it was saved, checked again against the object's fields where it is applied. */
  filter: unknown;
  sort: string | null;
}

const viewById = orgQuery(
  (db, a: { id: string }) =>
    db.selectFrom('saved_views').select(['id', 'name', 'object', 'filter', 'sort']).where('id', '=', a.id),
  { reusePlan: true },
);

/**
 * The saved view a list's `view` names, for the list of `object` (`deals`). An id the organization has no
 * view by (another organization's too) is a 400 naming `view`, as a cursor (`after`) whose row is gone is:
 * the list is there, its parameter is wrong. A view of another object is a 400 saying where it lists.
 */
export async function appliedView(em: EntityManager, object: string, id: string): Promise<AppliedView> {
  const [row] = await viewById(em, { id });
  if (!row)
    throw new ApiError('invalid_request', 'view: no saved view with this id (deleted?); see GET /views');
  if (row.object !== object)
    throw new ApiError(
      'invalid_request',
      `view: saved view ${row.id} ("${row.name}") is a view of ${row.object}, not of ${object}; apply it to GET /${row.object}`,
    );
  return {
    id: row.id,
    name: row.name,
    filter: row.filter == null ? null : asJson(row.filter),
    sort: row.sort,
  };
}

/**
 * What a saved view no longer fits (a custom field converted to another type, so an operator or a value
 * no longer applies; a field it sorts by made a multi-select) as the list's 400 (or a related record's
 * 403): naming `view`, which view, and the node inside it by its pointer (`filter/and/1/op: …`), never a
 * 500. Other errors pass as they are.
 */
export function withinView<T>(view: AppliedView, object: string, check: () => T): T {
  try {
    return check();
  } catch (err) {
    if (err instanceof ApiError && (err.code === 'invalid_request' || err.code === 'insufficient_scope'))
      throw new ApiError(
        err.code,
        `view: saved view ${view.id} ("${view.name}") ${err.code === 'invalid_request' ? `no longer fits the fields of ${object}` : 'reads records this key may not'}: ${err.message}${err.code === 'invalid_request' ? ` (change it with PATCH /views/${view.id})` : ''}`,
      );
    throw err;
  }
}
