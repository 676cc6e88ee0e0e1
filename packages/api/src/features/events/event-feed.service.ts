import { type Tables, TEST_EVENT_TYPE } from '@crm/db';
import { type Kysely, type SqlBool, sql } from 'kysely';
import type { z } from 'zod';
import type { AuthedContext } from '../../context.ts';
import { ApiError, notFound } from '../../errors.ts';
import { orgQuery } from '../../org-scope.ts';
import { matchesPlan } from '../../query/evaluate.ts';
import { checkEventFilter, type EventPlans } from '../../query/event-filter.ts';
import { placeCommitted } from '../../sequencer.ts';
import type { EventListQuery, FeedEvent } from './event-feed.schemas.ts';

type Row = {
  id: string;
  type: string;
  payload: string;
  position: string | number;
  actor: unknown;
  request_id: string | null;
};

function toFeedEvent(row: Row): z.infer<typeof FeedEvent> {
  const body = JSON.parse(row.payload) as Record<string, unknown>;
  const actor = typeof row.actor === 'string' ? JSON.parse(row.actor) : (row.actor ?? null);
  return {
    id: row.id,
    ...body,
    cursor: String(row.position),
    actor,
    request_id: row.request_id,
  } as z.infer<typeof FeedEvent>;
}

/** The caller's placed events, test events left out: what both reads of the feed start from. */
const placedEvents = (db: Kysely<Tables>) =>
  db
    .selectFrom('outbox_events')
    .select(['id', 'type', 'payload', 'position', 'actor', 'request_id'])
    .where('position', 'is not', null)
    .where('type', '<>', sql.lit(TEST_EVENT_TYPE) as never);

const feedPage = orgQuery((db, a: { after?: string; types?: string[]; limit: number }) => {
  let page = placedEvents(db);
  if (a.after) page = page.where(sql<SqlBool>`position > ${a.after}::bigint`);
  if (a.types) page = page.where(sql<SqlBool>`type = any(${a.types})`);
  return page.orderBy('position').limit(a.limit);
});

const feedEvent = orgQuery((db, a: { id: string }) => placedEvents(db).where('id', '=', a.id));

/** The most events a filtered read of the feed reads in one call (docs/api/events.md#filters). */
export const FILTER_SCAN_LIMIT = 5_000;
/** Events read per statement of a filtered read. */
const FILTER_SCAN_BATCH = 500;

/**
 * A page of the events whose record meets the filter: read in feed order after `after`, at most
 * FILTER_SCAN_LIMIT in one call, until `limit` match. The cursor is the last event read, matching or not,
 * so the next call does not read those again; `has_more` says whether events were left unread.
 */
async function filteredEvents(
  ctx: AuthedContext,
  query: EventListQuery & { types: string[] },
  plans: EventPlans,
) {
  const data: z.infer<typeof FeedEvent>[] = [];
  let cursor = query.after;
  let read = 0;
  let more = true;
  while (more && data.length < query.limit && read < FILTER_SCAN_LIMIT) {
    const batch = Math.min(FILTER_SCAN_BATCH, FILTER_SCAN_LIMIT - read);
    const rows = (await feedPage(ctx.em, { after: cursor, types: query.types, limit: batch + 1 })) as Row[];
    more = rows.length > batch;
    for (const row of rows.slice(0, batch)) {
      read++;
      cursor = String(row.position);
      const event = toFeedEvent(row);
      const plan = plans[row.type];
      if (plan && matchesPlan(plan, event.data)) data.push(event);
      if (data.length === query.limit) {
        more = more || row !== rows.at(Math.min(batch, rows.length) - 1);
        break;
      }
    }
  }
  return { data, meta: { next_cursor: cursor ?? null, has_more: more } };
}

/** A page of the caller's feed after `after`, in feed order (events are placed before they are read). */
export async function listEvents(ctx: AuthedContext, query: EventListQuery) {
  if (query.filter !== undefined) {
    if (!query.types)
      throw new ApiError(
        'invalid_request',
        'types: required with filter (the filter is checked against the record of each type: deal.updated,deal.won)',
      );
    const plans = await checkEventFilter(ctx.em, query.filter, query.types, {
      filter: 'filter',
      types: 'types',
    });
    await placeCommitted(ctx.services.orm.em);
    return filteredEvents(ctx, { ...query, types: query.types }, plans);
  }
  await placeCommitted(ctx.services.orm.em);
  const rows = await feedPage(ctx.em, { after: query.after, types: query.types, limit: query.limit + 1 });
  const page = (rows as Row[]).slice(0, query.limit);
  const data = page.map(toFeedEvent);
  return {
    data,
    meta: {
      next_cursor: data.at(-1)?.cursor ?? query.after ?? null,
      has_more: rows.length > query.limit,
    },
  };
}

const eventsNamingRecord = orgQuery((db, a: { id: string }) =>
  placedEvents(db).where(sql<SqlBool>`position(${a.id} in payload) > 0`).orderBy('position'),
);

/**
 * Every event of the caller's feed that names the record `id` (its payload holds the id: the record's own
 * events, and those of links to it), in feed order: a person's export. A scan of the organization's events.
 */
export async function eventsNaming(ctx: AuthedContext, id: string) {
  await placeCommitted(ctx.services.orm.em);
  return ((await eventsNamingRecord(ctx.em, { id })) as Row[]).map(toFeedEvent);
}

export async function getEvent(ctx: AuthedContext, id: string) {
  await placeCommitted(ctx.services.orm.em);
  const [row] = await feedEvent(ctx.em, { id });
  if (!row) throw notFound('Event');
  return toFeedEvent(row as Row);
}
