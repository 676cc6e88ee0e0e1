import {
  type BriefingDealRow,
  type DealAttention,
  type FieldValueFacts,
  historyFactsAt,
  type OverdueTasks,
} from '@crm/ai';
import type { EntityManager } from '@crm/db';
import { sql } from 'kysely';
import { jsonBuildObject } from 'kysely/helpers/postgres';
import { orgQuery } from '../../org-scope.ts';
import { asJson } from '../../read-model.ts';
import { stakeholdersOf } from '../deals/stakeholders.service.ts';
import { fieldValues } from './deal-history.queries.ts';
import { asDate } from './rows.ts';

/** The organization's overdue tasks are counted up to this many (then "more than"), as search counts. */
export const OVERDUE_COUNT_UP_TO = 1_000;
/** How many of the oldest overdue tasks the briefing and coaching name. */
export const OVERDUE_NAMED = 3;

// Literals, not parameters: the planner matches them to the partial index of open tasks
// (engagements_open_tasks_due, Migration20261202000400_ai_open_tasks).
const OPEN_TASK = sql.lit<'task'>('task');
const OPEN = sql.lit<'open'>('open');
const TWO_WAY = [sql.lit<'call'>('call'), sql.lit<'meeting'>('meeting')];

interface TaskRow {
  id: string;
  subject: string;
  due_at: unknown;
  deal_title?: string | null;
}

/**
 * For each of `ids` (deals the briefing lists: at most 30), in one statement: its stakeholders with their
 * engagement (`stakeholdersOf`, the detail's definition), the contacts who took part in a call or meeting
 * logged on it, and its open tasks past due (count and the oldest), each read down the deal's links
 * (`engagement_links_target`).
 */
const attentionRows = orgQuery((db, a: { ids: string[] }) =>
  db
    .selectFrom('deals as d')
    .select((eb) => [
      'd.id',
      stakeholdersOf(['id', 'name', 'engagement_level']).as('people'),
      eb
        .selectFrom('engagement_links as l')
        .innerJoin('engagements as e', 'e.id', 'l.engagement_id')
        .innerJoin('engagement_links as p', 'p.engagement_id', 'e.id')
        .select(sql<unknown>`coalesce(json_agg(distinct p.target_id), '[]'::json)`.as('ids'))
        .whereRef('l.target_id', '=', 'd.id')
        .where('e.type', 'in', TWO_WAY)
        .where('p.participant', '=', sql.lit(true))
        .as('met'),
      eb
        .selectFrom('engagement_links as l')
        .innerJoin('engagements as e', 'e.id', 'l.engagement_id')
        .select(sql<string>`count(*)`.as('n'))
        .whereRef('l.target_id', '=', 'd.id')
        .where('e.type', '=', OPEN_TASK)
        .where('e.status', '=', OPEN)
        .where('e.due_at', '<', sql<Date>`now()`)
        .as('overdue'),
      eb
        .selectFrom('engagement_links as l')
        .innerJoin('engagements as e', 'e.id', 'l.engagement_id')
        .select((eb) =>
          jsonBuildObject({
            id: eb.ref('e.id'),
            subject: eb.ref('e.subject'),
            due_at: eb.ref('e.due_at'),
          }).as('task'),
        )
        .whereRef('l.target_id', '=', 'd.id')
        .where('e.type', '=', OPEN_TASK)
        .where('e.status', '=', OPEN)
        .where('e.due_at', '<', sql<Date>`now()`)
        .orderBy('e.due_at')
        .orderBy('e.id')
        .limit(sql.lit(1))
        .as('oldest'),
    ])
    .where('d.id', '=', (eb) => eb.fn.any(eb.val(a.ids))),
);

/** A deal's close date pushes up to now (the analysis' count, history.ts `historyFactsAt`), the last one cited. */
function pushesOf(values: FieldValueFacts[] | undefined, now: number): DealAttention['close_date_pushes'] {
  const { pushes } = historyFactsAt(values, now);
  return { count: pushes.length, last: pushes.at(-1) ?? null };
}

/**
 * The deals' attention facts (DealAttention) set on the rows: single-threaded when exactly one of its
 * stakeholders is engaged (engagement high or medium, or a part in a logged call or meeting: the
 * analysis' definition, pillars.ts `engagedContacts`), its overdue tasks and its close date pushes.
 */

export async function withAttention(em: EntityManager, rows: BriefingDealRow[]): Promise<void> {
  const ids = [...new Set(rows.map((r) => r.id))];
  if (ids.length === 0) return;
  // The listed deals' close date values too (at most 30 deals: one more statement, bounded at any size).
  const [found, values] = await Promise.all([attentionRows(em, { ids }), fieldValues(em, ids)]);
  const now = Date.now();
  const byId = new Map<string, DealAttention>();
  for (const r of found) {
    const people = asJson<Array<{ id: string; name: string; engagement_level: string | null }>>(r.people);
    const met = new Set(asJson<string[]>(r.met ?? '[]'));
    const engaged = people.filter(
      (c) => c.engagement_level === 'high' || c.engagement_level === 'medium' || met.has(c.id),
    );
    const oldest = r.oldest == null ? null : asJson<TaskRow>(r.oldest);
    byId.set(r.id, {
      single_threaded_with: engaged.length === 1 ? (engaged[0]?.name ?? null) : null,
      overdue_tasks: Number(r.overdue ?? 0),
      oldest_overdue: oldest
        ? { id: oldest.id, subject: oldest.subject, due_at: asDate(oldest.due_at) }
        : null,
      close_date_pushes: pushesOf(values.get(r.id), now),
    });
  }
  for (const row of rows) row.attention = byId.get(row.id);
}

/**
 * The organization's open tasks past due: counted up to OVERDUE_COUNT_UP_TO and the OVERDUE_NAMED oldest
 * with a deal each is linked to, read from the partial index of open tasks by due date, so the cost is
 * that bound at any size.
 */
const overdueQuery = orgQuery((db) =>
  db.selectNoFrom((eb) => [
    eb
      .selectFrom(
        eb
          .selectFrom('engagements as e')
          .select('e.id')
          .where('e.type', '=', OPEN_TASK)
          .where('e.status', '=', OPEN)
          .where('e.due_at', '<', sql<Date>`now()`)
          .limit(sql.lit(OVERDUE_COUNT_UP_TO + 1))
          .as('x'),
      )
      .select(sql<string>`count(*)`.as('n'))
      .as('n'),
    eb
      .selectFrom(
        eb
          .selectFrom('engagements as e')
          .select((eb) => [
            'e.id',
            'e.subject',
            'e.due_at',
            eb
              .selectFrom('engagement_links as l')
              .innerJoin('deals as d', 'd.id', 'l.target_id')
              .select('d.title')
              .whereRef('l.engagement_id', '=', 'e.id')
              .where('l.target_type', '=', sql.lit('deal'))
              .orderBy('d.title')
              .limit(sql.lit(1))
              .as('deal_title'),
          ])
          .where('e.type', '=', OPEN_TASK)
          .where('e.status', '=', OPEN)
          .where('e.due_at', '<', sql<Date>`now()`)
          .orderBy('e.due_at')
          .orderBy('e.id')
          .limit(sql.lit(OVERDUE_NAMED))
          .as('t'),
      )
      .select((eb) =>
        sql<unknown>`coalesce(${eb.fn
          .jsonAgg(
            jsonBuildObject({
              id: eb.ref('t.id'),
              subject: eb.ref('t.subject'),
              due_at: eb.ref('t.due_at'),
              deal_title: eb.ref('t.deal_title'),
            }),
          )
          .orderBy('t.due_at')
          .orderBy('t.id')}, '[]'::json)`.as('list'),
      )
      .as('oldest'),
  ]),
);

export async function overdueTasks(em: EntityManager): Promise<OverdueTasks> {
  const [row] = await overdueQuery(em, {});
  const n = Number(row?.n ?? 0);
  return {
    count: Math.min(n, OVERDUE_COUNT_UP_TO),
    more: n > OVERDUE_COUNT_UP_TO,
    oldest: asJson<TaskRow[]>(row?.oldest ?? '[]').map((t) => ({
      id: t.id,
      subject: t.subject,
      due_at: asDate(t.due_at),
      deal_title: t.deal_title ?? null,
    })),
  };
}
