import type { EntityManager } from '@crm/db';
import { currentOrg, orgRows } from '../../read-model.ts';
import { ACTIVE_AT, KEPT_TOTALS, stagesOfType } from './open-pipeline.sql.ts';
import type { PipelineHealthDto } from './pipeline.schemas.ts';
import { pipelineStages } from './stages.service.ts';

/** Deals closing within this many days count as needing a next step. */
export const CLOSING_SOON_DAYS = 7;

export async function listDefaultStages(em: EntityManager) {
  const stages = await pipelineStages(em);
  return stages.map((s) => ({
    id: s.id,
    name: s.name,
    stage_type: s.stage_type,
    position: s.position,
    color: s.color,
    is_closed: s.stage_type !== 'open',
    probability: s.probability,
  }));
}

/**
 * Pipeline health over the organization's open deals (README, "Pipeline health"):
 * - stale: no activity (or creation) for more than T days;
 * - critical: past the expected close date, or idle for more than 2T days;
 * - pending: not critical, and stale, closing within 7 days, or without a close date;
 * - healthy: active within T days and not past the close date.
 *
 * A deal that is not critical was active within 2T days, so the open deals are counted from the kept
 * counts and only those active within 2T days are read (per open stage, down deals_org_stage_active):
 * stale = all − active within T; critical = all − not critical. The cost follows the recent activity,
 * not the organization's size, and the figures are the same as counting every deal.
 */
export async function pipelineHealth(
  em: EntityManager,
  staleThresholdDays: number,
): Promise<PipelineHealthDto> {
  const org = currentOrg(em);
  const [row] = await orgRows<Record<string, string | number>>(
    em,
    `with stages as (${stagesOfType('open')}),
     kept as (${KEPT_TOTALS}),
     recent as (
       select d.expected_close_date as close_at, ${ACTIVE_AT} as active_at
         from stages s join deals d on d.org_id = ? and d.stage_id = s.id
        where ${ACTIVE_AT} >= now() - make_interval(days => ?)
     ), flagged as (
       select active_at < now() - make_interval(days => ?) as stale,
              coalesce(close_at < now(), false) as critical,
              (close_at is null or close_at < now() + make_interval(days => ?)) as closing
         from recent
     )
     select kept.deals as total,
            (select count(*) from flagged where not stale and not critical) as healthy,
            kept.deals - (select count(*) from flagged where not stale) as stale,
            kept.deals - (select count(*) from flagged where not critical) as critical,
            (select count(*) from flagged where not critical and (stale or closing)) as pending
       from kept`,
    [org, org, staleThresholdDays * 2, staleThresholdDays, CLOSING_SOON_DAYS],
  );
  const n = (k: string) => Number(row?.[k] ?? 0);
  const total = n('total');
  return {
    total_deals: total,
    healthy_deals: n('healthy'),
    healthy_percentage: total === 0 ? 0 : Math.round((n('healthy') / total) * 100),
    stale_deals: n('stale'),
    pending_actions: n('pending'),
    critical_actions: n('critical'),
    stale_threshold_days: staleThresholdDays,
  };
}
