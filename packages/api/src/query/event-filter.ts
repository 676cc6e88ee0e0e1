import type { EntityManager } from '@crm/db';
import { ApiError } from '../errors.ts';
import { type Plan, planOf } from './evaluate.ts';
import { type Catalogue, catalogueOf } from './fields.ts';
import { type Checked, checkFilter } from './filter.ts';
import type { ListedObject } from './list.ts';
import { EVENT_RECORDS } from './objects.ts';

/** A filter over events: the plan for each event kind it reads, by kind. */
export type EventPlans = Record<string, Plan>;

const invalid = (message: string) => new ApiError('invalid_request', message);

/** The first condition on a related record the event's data does not carry (a deal's `company.industry`). */
function uncarried(node: Checked): Extract<Checked, { kind: 'leaf' }> | undefined {
  if (node.kind === 'leaf') return node.field.related && !node.field.related.carried ? node : undefined;
  if (node.kind === 'not') return uncarried(node.node);
  for (const n of node.nodes) {
    const found = uncarried(n);
    if (found) return found;
  }
  return undefined;
}

/**
 * A filter over the records of events of `types` (a webhook's `events`, the feed's `types`), checked as a
 * list's filter is (the same checker, the same 400s naming the node by JSON pointer) against the record
 * of each kind: it must fit every one. A kind whose data is no record (`analysis.completed`) is a 400
 * naming it, and so is a condition on a related record its data does not carry (`company.industry` on a
 * deal: the deal's data has `company_id`, not the company). Answers the plan of each kind.
 */
export async function checkEventFilter(
  em: EntityManager,
  tree: unknown,
  types: readonly string[],
  names: { filter: string; types: string },
): Promise<EventPlans> {
  const byObject = new Map<ListedObject, string[]>();
  for (const [i, type] of types.entries()) {
    const object = EVENT_RECORDS[type as keyof typeof EVENT_RECORDS];
    if (!object)
      throw invalid(
        `${names.filter}: ${type} (${names.types}/${i}) carries no record a filter reads (its data is not a deal, contact, company or activity); leave it to an unfiltered webhook or feed read`,
      );
    byObject.set(object, [...(byObject.get(object) ?? []), type]);
  }
  const plans: EventPlans = {};
  for (const [object, kinds] of byObject) {
    const catalogue: Catalogue = await catalogueOf(em, object);
    const what = `${kinds.join(', ')}, whose data is ${/^[aeiou]/.test(object.what) ? 'an' : 'a'} ${object.what}`;
    let checked: Checked;
    try {
      checked = checkFilter(tree, catalogue, object.name, names.filter);
    } catch (err) {
      if (err instanceof ApiError && byObject.size > 1)
        throw new ApiError(err.code, `${err.message} (in the filter of ${what})`);
      throw err;
    }
    const related = uncarried(checked);
    if (related)
      throw invalid(
        `${related.pointer}/field: ${related.field.name} reads a related record, which the data of ${what} does not carry; filter on the record's own fields (${related.field.related?.via === 'company' ? 'company_id' : 'its id fields'}), or read the list with this filter when the event arrives`,
      );
    const plan = planOf(checked);
    for (const kind of kinds) plans[kind] = plan;
  }
  return plans;
}
