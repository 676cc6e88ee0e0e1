/**
 * SQL the analytics share to read the open pipeline in bounded ranges (README: Analytics at scale).
 * Their totals come from the counts the database keeps per stage; everything that depends on the clock
 * is read per stage down one of the (org_id, stage_id, …) indexes, from the recent end.
 */

/** When a deal was last touched: the expression the deals_org_stage_active index holds, written the same. */
export const ACTIVE_AT = 'coalesce(d.last_activity_at, d.created_at)';

/** The organization's stages of the given types, as a CTE body; its one parameter is the organization. */
export const stagesOfType = (...types: Array<'open' | 'won' | 'lost'>) =>
  `select id, name, stage_type from pipeline_stages where org_id = ? and stage_type in (${types.map((t) => `'${t}'`).join(', ')})`;

/** The kept size and value of the stages in CTE `stages`, as a CTE body; its one parameter is the organization. */
export const KEPT_TOTALS = `select coalesce(sum(n), 0) as deals, coalesce(sum(value_sum), 0) as value
   from deal_counts where org_id = ? and stage_id in (select id from stages)`;

/**
 * The clock of one analytics statement, as the body of a CTE named `t`: now, and the thresholds of a stale
 * threshold T (stale before now − T, at risk before now − 2T, closing before now + the closing window).
 * Parameters: T in days, 2T in days, the closing window in days. Read with `clock(…)`.
 */
export const CLOCK = `select now() as now, now() - make_interval(days => ?) as stale_before,
   now() - make_interval(days => ?) as risk_before, now() + make_interval(days => ?) as closing_before`;

/**
 * One of CLOCK's values, as a scalar subquery: computed once per statement, where `now() - interval`
 * written in a filter is computed per row (half the time of a count over the ~11,000 recently active deals
 * of a million-deal organization).
 */
export const clock = (value: 'now' | 'stale_before' | 'risk_before' | 'closing_before') =>
  `(select t.${value} from t)`;
