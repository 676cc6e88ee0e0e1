import { type EntityManager, PipelineStage } from '@crm/db';
import { ApiError } from '../../errors.ts';
import type { LIFECYCLE_STAGES } from '../deals/deal.schemas.ts';

/** A pipeline's stages in order, each with its pipeline loaded: the default pipeline unless one is named. */
export async function pipelineStages(em: EntityManager, pipelineId?: string): Promise<PipelineStage[]> {
  return em.find(PipelineStage, pipelineId ? { pipeline: pipelineId } : { pipeline: { isDefault: true } }, {
    populate: ['pipeline'],
    orderBy: { position: 'asc' },
  });
}

/**
 * The stage a deal should sit in: the requested one, which must belong to the pipeline in play (the
 * one asked for, else the deal's, else the default), or that pipeline's first stage. A stage of another
 * pipeline or organization (the org filter hides those, so they look missing) is a 400 that does not
 * tell the two apart. One query.
 */
export async function resolveStage(
  em: EntityManager,
  requested: { pipelineId?: string | undefined; stageId?: string | undefined },
  currentPipelineId?: string,
): Promise<{ stage: PipelineStage; stages: PipelineStage[] }> {
  const pipelineId = requested.pipelineId ?? currentPipelineId;
  const stages = await pipelineStages(em, pipelineId);
  if (stages.length === 0) {
    if (requested.pipelineId) throw new ApiError('invalid_request', 'pipeline_id: no such pipeline');
    throw new Error(`pipeline ${pipelineId ?? '(default)'} has no stages`);
  }
  if (!requested.stageId) return { stage: stages[0] as PipelineStage, stages };
  const stage = stages.find((s) => s.id === requested.stageId);
  if (!stage) {
    const pipeline = stages[0]?.pipeline.id;
    throw new ApiError('invalid_request', `stage_id: no such stage in pipeline ${pipeline}`);
  }
  return { stage, stages };
}

/**
 * The lifecycle a stage implies, given its pipeline's stages in order: the first open stage is lead,
 * other open stages opportunity, a won stage customer, a lost stage lost.
 */
export function lifecycleForStage(
  stage: PipelineStage,
  stages: readonly PipelineStage[],
): (typeof LIFECYCLE_STAGES)[number] {
  if (stage.stageType === 'won') return 'customer';
  if (stage.stageType === 'lost') return 'lost';
  const firstOpen = stages.find((s) => s.stageType === 'open');
  return firstOpen?.id === stage.id ? 'lead' : 'opportunity';
}
