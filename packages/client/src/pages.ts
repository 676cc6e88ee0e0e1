/** A page of a cursor list (deals, contacts, the event feed), as either client returns it. */
export interface CursorPage<T> {
  data: T[];
  /** `has_more`: the event feed's, whose `next_cursor` stays set at its end for polling later. */
  meta: { next_cursor: string | null; has_more?: boolean };
}

/**
 * Every item of a cursor list, page after page in index order (`after` = the last page's `next_cursor`),
 * however large the organization: `for await (const deal of allPages((after) =>
 * crm.deals.list.query({ limit: 100, after })))`. Works for every cursor list: deals, contacts and the
 * event feed (up to its present end).
 */
export async function* allPages<T>(
  page: (after: string | undefined) => Promise<CursorPage<T>>,
): AsyncGenerator<T> {
  let after: string | undefined;
  for (;;) {
    const { data, meta } = await page(after);
    yield* data;
    if (meta.next_cursor === null || meta.has_more === false || data.length === 0) return;
    after = meta.next_cursor;
  }
}
