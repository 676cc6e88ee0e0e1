import type { EntityManager } from '@crm/db';
import { orgRows } from '../../read-model.ts';
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
 */
export async function pipelineHealth(
  em: EntityManager,
  staleThresholdDays: number,
): Promise<PipelineHealthDto> {
  const [row] = await orgRows<Record<string, string | number>>(
    em,
    `with open_deals as (
       select d.expected_close_date as close_at,
              coalesce(d.last_activity_at, d.created_at) as active_at
         from deals d join pipeline_stages s on s.id = d.stage_id
        where d.org_id = ? and s.stage_type = 'open'
     ), flagged as (
       select active_at < now() - make_interval(days => ?) as stale,
              (coalesce(close_at < now(), false) or active_at < now() - make_interval(days => ?)) as critical,
              (close_at is null or close_at < now() + make_interval(days => ?)) as closing
         from open_deals
     )
     select count(*) as total,
            count(*) filter (where not stale and not critical) as healthy,
            count(*) filter (where stale) as stale,
            count(*) filter (where critical) as critical,
            count(*) filter (where not critical and (stale or closing)) as pending
       from flagged`,
    [staleThresholdDays, staleThresholdDays * 2, CLOSING_SOON_DAYS],
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
