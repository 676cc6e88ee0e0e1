import type { EntityManager } from '@crm/db';
import { currentOrg } from '../../org-scope.ts';
import { orgRows } from '../../read-model.ts';
import { ACTIVE_AT, CLOCK, clock, KEPT_TOTALS, stagesOfType } from './open-pipeline.sql.ts';
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
  // One pass over the range, each figure a filtered count of it (read from the index alone).
  const stale = `${ACTIVE_AT} < ${clock('stale_before')}`;
  const critical = `coalesce(d.expected_close_date < ${clock('now')}, false)`;
  const closing = `(d.expected_close_date is null or d.expected_close_date < ${clock('closing_before')})`;
  const [row] = await orgRows<Record<string, string | number>>(
    em,
    `with stages as (${stagesOfType('open')}),
     kept as (${KEPT_TOTALS}),
     t as (${CLOCK}),
     recent as (
       select count(*) filter (where not ${stale} and not ${critical}) as healthy,
              count(*) filter (where not ${stale}) as not_stale,
              count(*) filter (where not ${critical}) as not_critical,
              count(*) filter (where not ${critical} and (${stale} or ${closing})) as pending
         from stages s join deals d on d.org_id = ? and d.stage_id = s.id
        where ${ACTIVE_AT} >= ${clock('risk_before')}
     )
     select kept.deals as total, recent.healthy, kept.deals - recent.not_stale as stale,
            kept.deals - recent.not_critical as critical, recent.pending
       from kept, recent`,
    [org, staleThresholdDays, staleThresholdDays * 2, CLOSING_SOON_DAYS, org],
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
