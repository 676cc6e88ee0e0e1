import type { EntityManager } from '@crm/db';
import { SIGNAL_DAYS } from './briefing.service.ts';
import { COACHING_PERIOD_DAYS } from './coaching.service.ts';

/**
 * Upkeep of the kept analytics (Migration20261129000000_analytics_aggregates), hourly: folds the sums'
 * rows of differences into one row per key (writers only append), then deletes the close facts, day sums
 * and signal hours no read reaches any more (coaching reads 90 days, the briefing 7; the migration keeps a
 * day more, this keeps two): without it deal_closes would end up holding a row for nearly every deal.
 * Facts go first, so the differences they leave land on days already past every read. Returns the rows
 * deleted.
 */
export async function maintainKeptAnalytics(em: EntityManager): Promise<number> {
  await em.execute('select crm_fold_kept_sums()');
  const [facts] = await em.execute<Array<{ n: string | number }>>(
    `with facts as (delete from deal_closes where closed_at < now() - interval '${COACHING_PERIOD_DAYS + 2} days' returning 1)
     select count(*) as n from facts`,
  );
  const [sums] = await em.execute<Array<{ n: string | number }>>(
    `with days as (delete from deal_close_days
                    where day < (now() at time zone 'UTC')::date - ${COACHING_PERIOD_DAYS + 3} returning 1),
          hours as (delete from activity_signal_hours where hour < now() - interval '${SIGNAL_DAYS + 2} days' returning 1)
     select (select count(*) from days) + (select count(*) from hours) as n`,
  );
  return Number(facts?.n ?? 0) + Number(sums?.n ?? 0);
}
