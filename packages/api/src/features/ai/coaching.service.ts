import { type CoachingFacts, type CoachingResult, PUSHES_RISK, TRAITS, type TraitKey } from '@crm/ai';
import { type SqlBool, sql } from 'kysely';
import type { AuthedContext } from '../../context.ts';
import { orgQuery } from '../../org-scope.ts';
import { overdueTasks } from './attention.queries.ts';
import { listedDeals } from './briefing.service.ts';
import { aiRuntime } from './runtime.ts';

/** Coaching looks at the deals closed in this many past days. */
export const COACHING_PERIOD_DAYS = 90;

/** The coaching traits: each a column of the kept close facts (deal_closes) and of their day sums. */
const TRAIT_KEYS = Object.keys(TRAITS) as TraitKey[];

// The bounds are written out (not taken from a CTE), so that the planner reads them as index bounds.
const SINCE = sql<Date>`(now() - make_interval(hours => ${sql.lit(COACHING_PERIOD_DAYS * 24)}))`;
const SINCE_DAY = sql<Date>`(${SINCE} at time zone 'UTC')::date`;

/**
 * The closes of the period per outcome and lead source: the kept sums of its whole days, and the kept
 * facts of the one partial day at its start.
 */
const closeSums = orgQuery((db) =>
  db
    .selectFrom((eb) =>
      eb
        .selectFrom('deal_close_days as k')
        .select([
          'k.won',
          'k.lead_source',
          'k.deals',
          'k.cycle_seconds',
          'k.activities',
          ...TRAIT_KEYS.map((t) => sql.ref<number>(`k.${t}`).as(t)),
        ])
        .where('k.day', '>', SINCE_DAY)
        .unionAll(
          eb
            .selectFrom('deal_closes as f')
            .select([
              'f.won',
              'f.lead_source',
              sql.lit(1).as('deals'),
              'f.cycle_seconds',
              sql.ref<string>('f.activities').as('activities'),
              ...TRAIT_KEYS.map((t) => sql<number>`${sql.ref(`f.${t}`)}::int`.as(t)),
            ])
            .where('f.closed_at', '>', SINCE)
            .where('f.closed_at', '<', sql<Date>`(${SINCE_DAY} + 1)::timestamp at time zone 'UTC'`),
        )
        .as('x'),
    )
    .select([
      'won',
      'lead_source',
      sql<string>`sum(deals)`.as('deals'),
      sql<string>`sum(cycle_seconds) / 86400`.as('cycle_days'),
      sql<string>`sum(activities)`.as('activities'),
      ...TRAIT_KEYS.map((t) => sql<string>`sum(${sql.ref(t)})`.as(t)),
    ])
    .groupBy(['won', 'lead_source'])
    .having(sql<SqlBool>`sum(deals) > 0`),
);

/**
 * GET /coaching: the deals closed (moved to a won or lost stage, or created closed) in the last 90 days,
 * compared: each trait counted among won and among lost deals, cycle length (creation to close) and
 * activity volume per outcome, and outcomes per lead source. Traits read the deals and contacts as they are
 * now (competition: the deal's or a contact's notes mention it).
 *
 * The database keeps these facts per closed deal and their sums per UTC day, outcome and lead source,
 * recomputed whenever a deal, its contacts or its activities change
 * (Migration20261129000000_analytics_aggregates): the whole days of the period are summed, and the facts
 * of the one partial day at its start are read one by one. The cost is the same at any size.
 *
 * Then the open deals to act on now, named: the single-threaded ones among those the briefing lists, and
 * the organization's overdue tasks (attention.queries.ts; both bounded at any size).
 */
export async function coaching(ctx: AuthedContext): Promise<CoachingResult> {
  const [rows, pipeline, overdue] = await Promise.all([
    closeSums(ctx.em, {}) as Promise<Record<string, unknown>[]>,
    listedDeals(ctx.em, ctx.services.config.staleThresholdDays),
    overdueTasks(ctx.em),
  ]);
  // The open deals the briefing lists (closing this week, stale, at risk): the single-threaded among them.
  const listed = new Map(
    [...pipeline.closingThisWeek, ...pipeline.atRisk, ...pipeline.stale].map((r) => [r.id, r] as const),
  );
  const won = rows.filter((r) => r.won === true);
  const lost = rows.filter((r) => r.won === false);
  const sum = (group: Record<string, unknown>[], key: string) =>
    group.reduce((a, r) => a + Number(r[key] ?? 0), 0);
  const wonDeals = sum(won, 'deals');
  const lostDeals = sum(lost, 'deals');
  const avg = (group: Record<string, unknown>[], key: string, n: number) =>
    n === 0 ? null : sum(group, key) / n;
  const sources = new Map<string, { source: string; won: number; lost: number }>();
  for (const r of rows) {
    const source = String(r.lead_source);
    if (!source) continue;
    const entry = sources.get(source) ?? { source, won: 0, lost: 0 };
    if (r.won === true) entry.won += Number(r.deals);
    else entry.lost += Number(r.deals);
    sources.set(source, entry);
  }
  const facts: CoachingFacts = {
    now: new Date(),
    periodDays: COACHING_PERIOD_DAYS,
    won: wonDeals,
    lost: lostDeals,
    avgCycleDaysWon: avg(won, 'cycle_days', wonDeals),
    avgCycleDaysLost: avg(lost, 'cycle_days', lostDeals),
    avgActivitiesWon: avg(won, 'activities', wonDeals),
    avgActivitiesLost: avg(lost, 'activities', lostDeals),
    traits: TRAIT_KEYS.map((key) => ({ key, won_with: sum(won, key), lost_with: sum(lost, key) })),
    sources: [...sources.values()],
    attention: {
      singleThreaded: [...listed.values()].flatMap((r) =>
        r.attention?.single_threaded_with
          ? [{ id: r.id, title: r.title, with: r.attention.single_threaded_with }]
          : [],
      ),
      overdueTasks: overdue,
      slipping: [...listed.values()].flatMap((r) => {
        const pushes = r.attention?.close_date_pushes?.count ?? 0;
        return pushes >= PUSHES_RISK ? [{ id: r.id, title: r.title, pushes }] : [];
      }),
    },
  };
  const { result } = await aiRuntime(ctx.services).coaching.invoke(facts);
  return result;
}
