import type { Tables } from '@crm/db';
import { expressionBuilder, type QueryCreator, type RawBuilder, sql } from 'kysely';

/**
 * Builder pieces the analytics share to read the open pipeline in bounded ranges (docs/api/analytics.md:
 * Analytics at scale), for queries written with `orgQuery` (which scopes every tenant table they name). Their totals
 * come from the counts the database keeps per stage; everything that depends on the clock is read per
 * stage down one of the (org_id, stage_id, …) indexes, from the recent end.
 */

type StageType = 'open' | 'won' | 'lost';

/** The CTE `stages` (`stagesOfType`), as the queries that read it see it. */
export interface StagesCte {
  stages: { id: string; name: string; stage_type: StageType };
}

/** The CTE `t` (`CLOCK`), as the queries that read it see it. */
export interface ClockCte {
  t: { now: Date; stale_before: Date; risk_before: Date; closing_before: Date };
}

/**
 * When a deal (as `d`) was last touched: the expression the deals_org_stage_active index holds, written
 * the same.
 */
export const ACTIVE_AT = sql<Date>`coalesce(${sql.ref('d.last_activity_at')}, ${sql.ref('d.created_at')})`;

/** The organization's stages of the given types, as the body of the CTE `stages`. */
export const stagesOfType = (...types: StageType[]) =>
  expressionBuilder<Tables, never>()
    .selectFrom('pipeline_stages')
    .select(['id', 'name', 'stage_type'])
    .where(
      'stage_type',
      'in',
      types.map((t) => sql.lit(t)),
    );

const withStages = expressionBuilder<Tables & StagesCte, never>();

/** The kept counts of the stages in CTE `stages`. */
export const keptOfStages = () =>
  withStages.selectFrom('deal_counts').where('stage_id', 'in', withStages.selectFrom('stages').select('id'));

/** The kept size and value of the stages in CTE `stages`, as a CTE body. */
export const KEPT_TOTALS = keptOfStages().select((eb) => [
  eb.fn.coalesce(eb.fn.sum<string>('n'), sql.lit(0)).as('deals'),
  eb.fn.coalesce(eb.fn.sum<string>('value_sum'), sql.lit(0)).as('value'),
]);

/** A number of days in a statement: an `orgQuery` argument, or a constant as `sql.lit(…)`. */
type Days = number | RawBuilder<number>;

/**
 * The clock of one analytics statement, as the body of a CTE named `t` (from the `with` callback's query
 * creator): now, and the thresholds of a stale threshold T (stale before now − T, at risk before now − 2T,
 * closing before now + the closing window). Read with `clock(…)`.
 */
export const CLOCK = <DB>(qc: QueryCreator<DB>, days: { stale: Days; risk: Days; closing: Days }) =>
  qc.selectNoFrom([
    sql<Date>`now()`.as('now'),
    sql<Date>`now() - make_interval(days => ${days.stale})`.as('stale_before'),
    sql<Date>`now() - make_interval(days => ${days.risk})`.as('risk_before'),
    sql<Date>`now() + make_interval(days => ${days.closing})`.as('closing_before'),
  ]);

const withClock = expressionBuilder<ClockCte, never>();

/**
 * One of CLOCK's values, as a scalar subquery: computed once per statement, where `now() - interval`
 * written in a filter is computed per row (half the time of a count over the ~11,000 recently active deals
 * of a million-deal organization).
 */
export const clock = (value: keyof ClockCte['t']) => withClock.selectFrom('t').select(`t.${value}`);

/**
 * `now() - days` written out, for the one condition that bounds an index range (the deals active since
 * the at-risk threshold): the planner folds it to estimate the range's rows, where it reads a `clock(…)`
 * subquery as an unknown value and takes a third of a stage's deals for it. At a million deals it then
 * read every open deal's row through the stage index (0.6-1.3 s, measured for issue 33) instead of the
 * ~11,000 recent entries of deals_org_stage_active. Computed once per statement all the same (an index
 * bound), and equal to `clock('risk_before')` (now() is the transaction's).
 */
export const since = (days: Days) => sql<Date>`now() - make_interval(days => ${days})`;
