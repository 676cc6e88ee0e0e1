import type { EntityManager } from '@crm/db';
import { type Expression, type RawBuilder, type SqlBool, sql } from 'kysely';
import { ApiError } from '../errors.ts';
import { orgDb } from '../org-scope.ts';
import { isoOf } from '../read-model.ts';
import { placeCommitted } from '../sequencer.ts';
import { catalogueOf, type ObjectFrom } from './fields.ts';
import { compileFilter } from './filter.ts';
import { filterOf, type ListedObject } from './list.ts';
import { SYNC_COUNTED, SYNC_DOCS, TOMBSTONE_DAYS } from './sync-schemas.ts';
import { appliedView } from './views.ts';

/** How far before `updated_since` a walk starts: the application's clock may run ahead of the database's. */
const CLOCK_MARGIN = '1 minute';

/** What a synced object reads: its table's name in `sync_changes`, and its rows as the API answers them. */
export interface SyncedObject {
  table: 'deals' | 'contacts' | 'companies' | 'engagements';
  /** The alias its rows' FROM gives the table (`d`). */
  alias: string;
  rows: (db: Parameters<ListedObject['rows']>[0]) => ObjectFrom;
  /** The filter language's declaration, when the object has one. */
  listed?: ListedObject;
}

/**
 * A listed object as a sync reads it: its table in `sync_changes`, its rows and its filter language's
 * declaration, read when called (the query language's objects import the features' modules: a cycle at
 * load).
 */
export function syncedOf(table: SyncedObject['table'], listed: () => ListedObject): SyncedObject {
  return {
    table,
    get alias() {
      return listed().alias;
    },
    get rows() {
      return listed().rows;
    },
    get listed() {
      return listed();
    },
  };
}

export interface SyncPage {
  rows: Record<string, unknown>[];
  deleted?: Array<{ id: string; deleted_at: string }>;
  total: number;
  total_exact: boolean;
  has_more: boolean;
  next_cursor: string;
}

/**
 * A page of a sync (docs/api/sync.md): the records of `object` changed at or after `updated_since` that
 * meet the list's conditions (`where`, `filter`), and with `include_deleted` the tombstones of those
 * deleted since, in sync order after `after`. Changes are placed first (as a read of the event feed does),
 * so whatever committed before this read is on this page or a later one, and whatever commits later is
 * placed after it.
 */
export async function syncList(
  em: EntityManager,
  object: SyncedObject,
  query: {
    updated_since: string;
    include_deleted?: boolean | undefined;
    after?: string | undefined;
    limit: number;
    filter?: unknown;
    view?: string | undefined;
  },
  options: { granted: readonly string[]; where?: Expression<SqlBool>[] },
): Promise<SyncPage> {
  const conditions = [...(options.where ?? [])];
  if (query.filter !== undefined || query.view !== undefined) {
    const listed = object.listed;
    if (!listed) throw new ApiError('invalid_request', 'filter: this list takes no filter');
    // A saved view's filter applies; its sort does not (a sync answers in sync order).
    const view = query.view === undefined ? undefined : await appliedView(em, listed.name, query.view);
    const checked = filterOf(
      listed,
      await catalogueOf(em, listed),
      { filter: query.filter, view },
      options.granted,
    );
    if (checked) conditions.push(compileFilter(checked));
  }
  await placeCommitted(em);
  const db = orgDb(em);
  const since = query.updated_since;
  if (query.after !== undefined && query.include_deleted) {
    // Tombstones older than TOMBSTONE_DAYS are purged: a cursor from before the last day of them would
    // miss deletions (the first pass of that day is where every later tombstone is).
    const [kept] = await db
      .selectNoFrom(
        startAt(sql`now() - interval '${sql.raw(String(TOMBSTONE_DAYS - 1))} days'`).as('position'),
      )
      .execute();
    if (BigInt(query.after) < BigInt(kept?.position ?? 0))
      throw new ApiError(
        'invalid_request',
        `after: this cursor is older than the ${TOMBSTONE_DAYS - 1} days a cursor can be kept (tombstones go after ${TOMBSTONE_DAYS}); read again from an empty mirror (updated_since, no after) (${SYNC_DOCS})`,
      );
  }
  // The walk's start: after the last sequencer pass that ended before `updated_since` (less the margin):
  // every change at or after it was placed by a later pass. An index range from there, however large the
  // table.
  const start = startAt(sql`${since}::timestamptz - interval '${sql.raw(CLOCK_MARGIN)}'`);
  const from = query.after ?? '0';
  const alias = object.alias;
  // Typed loosely, as the filter language's queries are: the lateral rows are each object's own.
  const changes = (limit: number): ObjectFrom =>
    (db.selectFrom('sync_changes as sc') as ObjectFrom)
      .where('sc.object', '=', object.table)
      .where(sql<SqlBool>`sc.position > greatest(${from}::bigint, ${start})`)
      .where('sc.changed_at', '>=', sql<Date>`${since}::timestamptz`)
      .orderBy('sc.position')
      .limit(limit);
  const walk = (limit: number): ObjectFrom =>
    changes(limit)
      .leftJoinLateral(
        (eb: Parameters<SyncedObject['rows']>[0]) =>
          conditions
            .reduce((q: ObjectFrom, c) => q.where(c), object.rows(eb))
            .where(sql.ref(`${alias}.id`), '=', sql.ref('sc.id'))
            .as('r'),
        (join: ObjectFrom) => join.onTrue(),
      )
      .where(
        query.include_deleted
          ? sql<SqlBool>`(r.id is not null or sc.deleted_at is not null)`
          : sql<SqlBool>`r.id is not null`,
      );
  // Without conditions a change is its record's (a record is there exactly while its change is no
  // tombstone): what follows a page is counted from the changes alone, no record read.
  const rest = (limit: number): ObjectFrom =>
    conditions.length > 0
      ? walk(limit)
      : query.include_deleted
        ? changes(limit)
        : changes(limit).where('sc.deleted_at', 'is', null);
  const rows = (await walk(query.limit + 1)
    .select([
      'sc.position as sync_position',
      'sc.id as sync_id',
      isoOf('sc.deleted_at').as('sync_deleted_at'),
    ])
    .selectAll('r')
    .execute()) as Record<string, unknown>[];
  const page = rows.slice(0, query.limit);
  const has_more = rows.length > query.limit;
  let total = page.length;
  let total_exact = true;
  if (has_more) {
    // What follows this page, counted up to SYNC_COUNTED: a bound, not a scan of a whole first sync per page.
    const last = String(page.at(-1)?.sync_position);
    const [counted] = await db
      .selectFrom(
        rest(SYNC_COUNTED + 1)
          .where(sql<SqlBool>`sc.position > ${last}::bigint`)
          .select('sc.position')
          .as('rest'),
      )
      .select(sql<string>`count(*)`.as('n'))
      .execute();
    const more = Number(counted?.n ?? 0);
    total = page.length + Math.min(more, SYNC_COUNTED);
    total_exact = more <= SYNC_COUNTED;
  }
  const live = page
    .filter((r) => r.sync_deleted_at == null)
    .map(({ sync_position, sync_id, sync_deleted_at, ...row }) => row);
  const lastPosition = page.at(-1)?.sync_position;
  return {
    rows: live,
    ...(query.include_deleted
      ? {
          deleted: page
            .filter((r) => r.sync_deleted_at != null)
            .map((r) => ({ id: r.sync_id as string, deleted_at: r.sync_deleted_at as string })),
        }
      : {}),
    total,
    total_exact,
    has_more,
    next_cursor: lastPosition != null ? String(lastPosition) : await startOf(em, query.after, since),
  };
}

/**
 * The position of the last sequencer pass that ended before `at`: whatever committed at or after `at` was
 * placed after it (0 when no pass did: from the start).
 */
const startAt = (at: RawBuilder<unknown>) =>
  // The newest mark before `at` by the index on `at` (positions grow with it: passes take turns), one
  // row read however many marks 30 days hold.
  sql<string>`coalesce((select m.position from sync_marks m where m.at < ${at} order by m.at desc limit 1), 0)`;

/** Where a walk that found nothing stands: its `after`, else where `updated_since` starts it. */
async function startOf(em: EntityManager, after: string | undefined, since: string): Promise<string> {
  if (after !== undefined) return after;
  const [row] = await orgDb(em)
    .selectNoFrom(startAt(sql`${since}::timestamptz - interval '${sql.raw(CLOCK_MARGIN)}'`).as('position'))
    .execute();
  return String(row?.position ?? 0);
}

/** A sync page's `meta` (offset 0: a sync pages by cursor) and its tombstones, as every list answers them. */
export function syncAnswer(page: SyncPage, limit: number) {
  return {
    meta: {
      total: page.total,
      ...(page.total_exact ? {} : { total_exact: false as const }),
      limit,
      offset: 0,
      next_cursor: page.next_cursor,
      has_more: page.has_more,
    },
    ...(page.deleted ? { deleted: page.deleted } : {}),
  };
}
