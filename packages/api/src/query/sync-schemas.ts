import { z } from 'zod';
import { DateTime, DateTimeOut, Uuid } from '../schemas.ts';

/** How long a tombstone is kept (docs/api/sync.md): a sync cursor older than this (less a day) starts again. */
export const TOMBSTONE_DAYS = 30;

/** A sync cursor: a position in the sync order, as `meta.next_cursor` gives it. */
const POSITION = /^\d{1,18}$/;

export const SYNC_DOCS = 'docs/api/sync.md';

/** The parameters a list takes for a sync (docs/api/sync.md), beside its own. */
export const SyncParams = {
  updated_since: DateTime.optional().describe(
    `Only records changed (created, updated, or changed through what they show) at or after this time, in the order the changes committed (sync order), by \`after\` cursor; \`meta.next_cursor\` is where the next sync starts. Not with \`sort\` or \`offset\` (${SYNC_DOCS})`,
  ),
  include_deleted: z
    .preprocess((v) => (v === 'true' ? true : v === 'false' ? false : v), z.boolean())
    .optional()
    .describe(
      `With updated_since: also the records deleted since, as \`deleted: [{id, deleted_at}]\` (tombstones, kept ${TOMBSTONE_DAYS} days)`,
    ),
};

/** `after`: a record's id, or with `updated_since` a position in the sync order (the previous `meta.next_cursor`). */
// No length of its own: without updated_since it is checked as the id it always was (checkSyncInput).
export const SyncAfter = z
  .string()
  .optional()
  .describe(
    'Continue after this item: the previous page’s `meta.next_cursor` (an id; with `updated_since`, a position in the sync order); instead of `offset`',
  );

interface SyncInput {
  after?: string | undefined;
  offset?: number;
  sort?: string | undefined;
  updated_since?: string | undefined;
  include_deleted?: boolean | undefined;
}

/**
 * The input rules of a list that syncs (a superRefine of its query): `after` is an id, as it always was,
 * unless `updated_since` is given, when it is a sync position; a sync has its own order and its cursor, so
 * no `sort`, no `offset`; `include_deleted` only in a sync. Each a 400 naming the parameter.
 */
export function checkSyncInput(input: SyncInput, ctx: z.core.$RefinementCtx<unknown>): void {
  const issue = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
  if (input.updated_since === undefined) {
    if (input.after !== undefined) {
      const id = Uuid.safeParse(input.after);
      if (!id.success) for (const i of id.error.issues) issue('after', i.message);
    }
    if (input.include_deleted !== undefined) issue('include_deleted', 'only with updated_since (a sync)');
    return;
  }
  if (input.after !== undefined && !POSITION.test(input.after))
    issue('after', 'with updated_since, the previous page’s meta.next_cursor (a position: digits)');
  if (input.sort !== undefined)
    issue('sort', 'a sync answers in sync order: leave sort out with updated_since');
  if (input.offset) issue('offset', 'a sync pages by cursor: use after (meta.next_cursor), not offset');
}

export const Tombstone = z
  .object({ id: Uuid, deleted_at: DateTimeOut })
  .meta({ id: 'Tombstone', description: 'A record deleted since `updated_since`' });

/** What a sync adds to a list's answer: its tombstones (with include_deleted). */
export const SyncDeleted = z
  .array(Tombstone)
  .optional()
  .describe('With updated_since and include_deleted=true: the records deleted since, in this page’s range');

/** `meta.next_cursor`, which a sync gives as a position, and `meta.has_more`. */
export const SyncMetaFields = {
  next_cursor: z
    .string()
    .nullable()
    .describe(
      'Pass as `after` for the next page; null on the last page. With updated_since: never null, the position to pass as `after` next time (with the same updated_since), even when this page is the last',
    ),
  has_more: z.boolean().optional().describe('With updated_since: whether more changes follow this page now'),
};

/** `meta.total_exact` of a sync: what follows a page is counted up to SYNC_COUNTED. */
export const SYNC_COUNTED = 1_000;
export const SyncTotalExact = z
  .boolean()
  .optional()
  .describe(
    `Present (false) only when more match than \`total\` counts: with \`q\` matches are counted up to 1,000; with updated_since, this page and up to ${SYNC_COUNTED.toLocaleString('en')} changes after it`,
  );
