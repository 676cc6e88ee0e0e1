import type { EntityManager } from '@crm/db';
import { sql } from 'kysely';
import { orgQuery } from '../../org-scope.ts';
import { ACTIVE_AT, CLOCK, clock, KEPT_TOTALS, since, stagesOfType } from './open-pipeline.sql.ts';
import type { PipelineHealthDto } from './pipeline.schemas.ts';
import { pipelineStages } from './stages.service.ts';

/** Deals closing within this many days count as needing a next step. */
export const CLOSING_SOON_DAYS = 7;

/** A stage as the contract's `GET /pipeline/stages` answers it; the pipelines API adds its own fields. */
export function contractStage<
  S extends {
    id: string;
    name: string;
    stage_type: string | null;
    position: number;
    color: string | null;
    probability: number | null;
  },
>(
  s: S,
): Pick<S, 'id' | 'name' | 'stage_type' | 'position' | 'color' | 'probability'> & { is_closed: boolean } {
  return {
    id: s.id,
    name: s.name,
    stage_type: s.stage_type,
    position: s.position,
    color: s.color,
    is_closed: s.stage_type !== 'open',
    probability: s.probability,
  };
}

export async function listDefaultStages(em: EntityManager) {
  return (await pipelineStages(em)).map(contractStage);
}

/** A deal (in `d`, with the statement's clock `t`) idle for more than T days. */
const STALE = sql<boolean>`${ACTIVE_AT} < ${clock('stale_before')}`;
/** Past its expected close date. */
const PAST_CLOSE = sql<boolean>`coalesce(${sql.ref('d.expected_close_date')} < ${clock('now')}, false)`;
/** Closing within CLOSING_SOON_DAYS, or without a close date. */
const CLOSING = sql<boolean>`(${sql.ref('d.expected_close_date')} is null or ${sql.ref('d.expected_close_date')} < ${clock('closing_before')})`;

/**
 * The figures of pipelineHealth in one statement: the kept totals of the open stages, and one pass over
 * the range of the deals active within 2T days, each figure a filtered count of it (read from the index
 * alone). `stale` is T in days, `risk` 2T.
 */
const healthFigures = orgQuery((db, a: { stale: number; risk: number; pipeline_id?: string }) =>
  db
    .with('stages', () =>
      a.pipeline_id ? stagesOfType('open').where('pipeline_id', '=', a.pipeline_id) : stagesOfType('open'),
    )
    .with('kept', () => KEPT_TOTALS)
    .with('t', (qc) => CLOCK(qc, { stale: a.stale, risk: a.risk, closing: sql.lit(CLOSING_SOON_DAYS) }))
    .with('recent', (qc) =>
      qc
        .selectFrom('stages as s')
        .innerJoin('deals as d', 'd.stage_id', 's.id')
        .select([
          sql<string>`count(*) filter (where not ${STALE} and not ${PAST_CLOSE})`.as('healthy'),
          sql<string>`count(*) filter (where not ${STALE})`.as('not_stale'),
          sql<string>`count(*) filter (where not ${PAST_CLOSE})`.as('not_critical'),
          sql<string>`count(*) filter (where not ${PAST_CLOSE} and (${STALE} or ${CLOSING}))`.as('pending'),
        ])
        .where(sql<boolean>`${ACTIVE_AT} >= ${since(a.risk)}`),
    )
    .selectFrom(['kept', 'recent'])
    .select((eb) => [
      'kept.deals as total',
      'recent.healthy',
      eb('kept.deals', '-', eb.ref('recent.not_stale')).as('stale'),
      eb('kept.deals', '-', eb.ref('recent.not_critical')).as('critical'),
      'recent.pending',
    ]),
);

/**
 * Pipeline health over the organization's open deals, or one pipeline's (docs/api/analytics.md, "Pipeline health"):
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
  pipelineId?: string,
): Promise<PipelineHealthDto> {
  const [row] = await healthFigures(em, {
    stale: staleThresholdDays,
    risk: staleThresholdDays * 2,
    pipeline_id: pipelineId,
  });
  const n = (v: unknown) => Number(v ?? 0);
  const total = n(row?.total);
  return {
    total_deals: total,
    healthy_deals: n(row?.healthy),
    healthy_percentage: total === 0 ? 0 : Math.round((n(row?.healthy) / total) * 100),
    stale_deals: n(row?.stale),
    pending_actions: n(row?.pending),
    critical_actions: n(row?.critical),
    stale_threshold_days: staleThresholdDays,
  };
}
