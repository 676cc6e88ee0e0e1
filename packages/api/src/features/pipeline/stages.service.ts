import { type EntityManager, Pipeline, PipelineStage } from '@crm/db';
import { ApiError } from '../../errors.ts';
import type { LIFECYCLE_STAGES } from '../deals/deal.schemas.ts';

export async function defaultPipeline(em: EntityManager): Promise<Pipeline> {
  const pipeline = await em.findOne(Pipeline, { isDefault: true });
  // Every organization gets one at creation; its absence is a broken invariant, not bad input.
  if (!pipeline) throw new Error('organization has no default pipeline');
  return pipeline;
}

export async function stagesOf(em: EntityManager, pipelineId: string): Promise<PipelineStage[]> {
  return em.find(PipelineStage, { pipeline: pipelineId }, { orderBy: { position: 'asc' } });
}

/**
 * The stage a deal should sit in, given what the client asked for. A stage of another pipeline, or of
 * another organization (the org filter hides those, so they look missing), is rejected with a 400 that
 * does not tell the two apart.
 */
export async function resolveStage(
  em: EntityManager,
  requested: { pipelineId?: string | undefined; stageId?: string | undefined },
  currentPipelineId?: string,
): Promise<PipelineStage> {
  let pipelineId = requested.pipelineId ?? currentPipelineId;
  if (requested.pipelineId) {
    const pipeline = await em.findOne(Pipeline, { id: requested.pipelineId });
    if (!pipeline) throw new ApiError('invalid_request', 'pipeline_id: no such pipeline');
  }
  if (requested.stageId) {
    const stage = await em.findOne(PipelineStage, { id: requested.stageId }, { populate: ['pipeline'] });
    pipelineId ??= (await defaultPipeline(em)).id;
    if (!stage || stage.pipeline.id !== pipelineId)
      throw new ApiError('invalid_request', `stage_id: no such stage in pipeline ${pipelineId}`);
    return stage;
  }
  pipelineId ??= (await defaultPipeline(em)).id;
  const first = await em.findOne(
    PipelineStage,
    { pipeline: pipelineId },
    { orderBy: { position: 'asc' }, populate: ['pipeline'] },
  );
  if (!first) throw new ApiError('invalid_request', `pipeline_id: pipeline ${pipelineId} has no stages`);
  return first;
}

/** The lifecycle a stage implies: first stage lead, other open stages opportunity, won customer, lost lost. */
export async function lifecycleForStage(
  em: EntityManager,
  stage: PipelineStage,
): Promise<(typeof LIFECYCLE_STAGES)[number]> {
  if (stage.stageType === 'won') return 'customer';
  if (stage.stageType === 'lost') return 'lost';
  const firstOpen = await em.findOne(
    PipelineStage,
    { pipeline: stage.pipeline.id, stageType: 'open' },
    { orderBy: { position: 'asc' }, fields: ['id'] },
  );
  return firstOpen?.id === stage.id ? 'lead' : 'opportunity';
}
