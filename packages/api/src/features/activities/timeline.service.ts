import type { EntityManager } from '@crm/db';
import { sql } from 'kysely';
import { ApiError, notFound } from '../../errors.ts';
import { orgQuery } from '../../org-scope.ts';
import { asJson, isoOf, numberOrNull } from '../../read-model.ts';
import { activityColumns, toActivityDto } from './activities.service.ts';
import type { TimelineEntryDto, TimelineQuery } from './activity.schemas.ts';

/** A timestamp at the column's full (microsecond) precision, for the cursor: `at` alone is milliseconds. */
const exactOf = (column: string) =>
  sql<string>`to_char(${sql.ref(column)} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

type Page = { deal: string; at?: string; id?: string; limit: number };

/** `(at, id) < (cursor)`: the entries after the cursor, newest first. */
const before = (at: string, id: string, a: Page) =>
  sql<boolean>`(${sql.ref(at)}, ${sql.ref(id)}) < (${a.at}::timestamptz, ${a.id}::uuid)`;

/**
 * One page of a deal's timeline: each source read newest first from its index, from the cursor on, at most
 * `limit` rows each (the deal's links in `engagement_links_target`, its system activities in
 * `activities_deal_recent`, its analyses in `deal_analyses_deal_recent`), then merged and cut to `limit`.
 */
const timelinePage = orgQuery((db, a: Page) => {
  let activities = db
    .selectFrom('engagement_links as t')
    .innerJoin('engagements as e', 'e.id', 't.engagement_id')
    .select([
      sql.lit('activity').as('kind'),
      'e.id as id',
      't.occurred_at as at',
      sql<string | null>`null::text`.as('description'),
      sql<unknown>`null::jsonb`.as('changes'),
      sql<number | null>`null::int`.as('win_probability'),
      sql<string | null>`null::numeric`.as('total_score'),
      sql<string | null>`null::text`.as('score_band'),
      sql<string | null>`null::text`.as('deal_health'),
      sql<string | null>`null::text`.as('summary'),
    ])
    .where('t.target_id', '=', a.deal);
  let system = db
    .selectFrom('activities as s')
    .select([
      sql<string>`case s.type when 'stage_changed' then 'stage_change' else 'field_change' end`.as('kind'),
      's.id as id',
      's.created_at as at',
      's.description',
      sql<unknown>`s.changes`.as('changes'),
      sql<number | null>`null::int`.as('win_probability'),
      sql<string | null>`null::numeric`.as('total_score'),
      sql<string | null>`null::text`.as('score_band'),
      sql<string | null>`null::text`.as('deal_health'),
      sql<string | null>`null::text`.as('summary'),
    ])
    .where('s.deal_id', '=', a.deal)
    .where('s.type', 'in', [sql.lit('stage_changed'), sql.lit('deal_updated')]);
  let analyses = db
    .selectFrom('deal_analyses as x')
    .select([
      sql.lit('analysis').as('kind'),
      'x.id as id',
      'x.created_at as at',
      sql<string | null>`null::text`.as('description'),
      sql<unknown>`null::jsonb`.as('changes'),
      'x.win_probability',
      sql<string | null>`x.total_score`.as('total_score'),
      'x.score_band',
      'x.deal_health',
      sql<string | null>`x.result->>'summary'`.as('summary'),
    ])
    .where('x.deal_id', '=', a.deal);
  if (a.at !== undefined) {
    activities = activities.where(before('t.occurred_at', 't.engagement_id', a));
    system = system.where(before('s.created_at', 's.id', a));
    analyses = analyses.where(before('x.created_at', 'x.id', a));
  }
  const merged = db
    .selectFrom(
      activities.orderBy('t.occurred_at', 'desc').orderBy('t.engagement_id', 'desc').limit(a.limit).as('a'),
    )
    .selectAll()
    .unionAll(
      db
        .selectFrom(system.orderBy('s.created_at', 'desc').orderBy('s.id', 'desc').limit(a.limit).as('b'))
        .selectAll(),
    )
    .unionAll(
      db
        .selectFrom(analyses.orderBy('x.created_at', 'desc').orderBy('x.id', 'desc').limit(a.limit).as('c'))
        .selectAll(),
    );
  return db
    .selectFrom(merged.as('m'))
    .select([
      'm.kind',
      'm.id',
      isoOf('m.at').as('at'),
      exactOf('m.at').as('exact_at'),
      'm.description',
      'm.changes',
      'm.win_probability',
      'm.total_score',
      'm.score_band',
      'm.deal_health',
      'm.summary',
    ])
    .orderBy('m.at', 'desc')
    .orderBy('m.id', 'desc')
    .limit(a.limit);
});

const dealThere = orgQuery(
  (db, a: { id: string }) => db.selectFrom('deals').select('id').where('id', '=', a.id),
  {
    reusePlan: true,
  },
);

const activitiesById = orgQuery((db, a: { ids: string[] }) =>
  db
    .selectFrom('engagements as e')
    .select((eb) => activityColumns(eb))
    .where(sql<boolean>`e.id = any(${a.ids}::uuid[])`),
);

/** The cursor of the entry at `exactAt` with `id`: opaque to clients (base64url of both). */
const cursorOf = (exactAt: string, id: string) => Buffer.from(`${exactAt}|${id}`).toString('base64url');

function decodeCursor(after: string): { at: string; id: string } {
  const [at, id, ...rest] = Buffer.from(after, 'base64url').toString('utf8').split('|');
  if (
    rest.length > 0 ||
    !at ||
    !id ||
    !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/.test(at) ||
    !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id)
  )
    throw new ApiError('invalid_request', 'after: not a cursor of this timeline (use meta.next_cursor)');
  return { at, id };
}

/**
 * A deal's timeline, newest first: its logged activities (at occurred_at), its stage and field changes (the
 * system's stage_changed and deal_updated activities) and its AI analyses (at created_at), one cursor over
 * all of them: (at, id) of the last entry, ids unique across the three.
 */
export async function dealTimeline(em: EntityManager, query: TimelineQuery) {
  const cursor = query.after ? decodeCursor(query.after) : undefined;
  const [[deal], rows] = await Promise.all([
    dealThere(em, { id: query.id }),
    timelinePage(em, { deal: query.id, at: cursor?.at, id: cursor?.id, limit: query.limit + 1 }),
  ]);
  if (!deal) throw notFound('Deal');
  const page = rows.slice(0, query.limit);
  const ids = page.filter((r) => r.kind === 'activity').map((r) => r.id as string);
  const activities = new Map(
    (ids.length > 0 ? await activitiesById(em, { ids }) : []).map((r) => [r.id as string, toActivityDto(r)]),
  );
  const data = page.flatMap((r): TimelineEntryDto[] => {
    const base = { id: r.id as string, at: r.at as string };
    switch (r.kind) {
      case 'activity': {
        const activity = activities.get(base.id);
        // Deleted between the two reads: left out.
        return activity ? [{ kind: 'activity', ...base, activity }] : [];
      }
      case 'stage_change':
      case 'field_change':
        return [
          {
            kind: r.kind,
            ...base,
            description: (r.description as string | null) ?? null,
            changes: asJson<Record<string, { from: unknown; to: unknown }>>(r.changes ?? '{}'),
          },
        ];
      default:
        return [
          {
            kind: 'analysis',
            ...base,
            analysis: {
              win_probability: (r.win_probability as number | null) ?? null,
              total_score: numberOrNull(r.total_score),
              score_band: (r.score_band as string | null) ?? null,
              deal_health: (r.deal_health as string | null) ?? null,
              summary: (r.summary as string | null) ?? null,
            },
          },
        ];
    }
  });
  const last = page.at(-1);
  return {
    data,
    meta: {
      limit: query.limit,
      next_cursor:
        rows.length > query.limit && last ? cursorOf(last.exact_at as string, last.id as string) : null,
    },
  };
}
