import type { EntityManager } from '@crm/db';
import { type SqlBool, sql } from 'kysely';
import { LRUCache } from 'lru-cache';
import { ApiError } from '../../errors.ts';
import { currentOrg, orgQuery } from '../../org-scope.ts';
import type { LIFECYCLE_STAGES } from '../deals/deal.schemas.ts';

/** A stage as the pipeline endpoints and deal writes need it (plain row: no entities to hydrate or track). */
export interface StageRow {
  id: string;
  name: string;
  stage_type: 'open' | 'won' | 'lost';
  position: number;
  color: string;
  probability: number | null;
  pipeline_id: string;
  pipeline_name: string;
}

/**
 * How long a process reuses an organization's pipeline stages it has read. A write through the pipelines
 * API (pipelines.service.ts) forgets the organization's at once in the process that made it; other
 * instances, and changes made by hand in SQL, are seen within this time (docs/api/pipelines.md: Stages
 * read from memory). A deal's create or stage move reads them; this saves that round trip
 * (docs/development.md: What made the difference).
 */
export const STAGE_CACHE_TTL_MS = 10_000;
const recentStages = new LRUCache<string, readonly StageRow[]>({ max: 10_000, ttl: STAGE_CACHE_TTL_MS });

/** A pipeline's stages in order: the named pipeline's, else the default's. */
const stagesOf = orgQuery((db, a: { pipeline_id?: string }) => {
  const stages = db
    .selectFrom('pipelines as p')
    .innerJoin('pipeline_stages as s', 's.pipeline_id', 'p.id')
    .select([
      's.id',
      's.name',
      's.stage_type',
      's.position',
      's.color',
      's.probability',
      's.pipeline_id',
      'p.name as pipeline_name',
    ]);
  return (
    a.pipeline_id ? stages.where('p.id', '=', a.pipeline_id) : stages.where(sql.ref<SqlBool>('p.is_default'))
  ).orderBy('s.position');
});

/**
 * Drops what this process remembers of an organization's stages: after a pipeline or stage write, once its
 * transaction has ended (a read within it may have remembered what it saw).
 */
export function forgetStages(orgId: string): void {
  const prefix = `${orgId}:`;
  for (const key of [...recentStages.keys()]) if (key.startsWith(prefix)) recentStages.delete(key);
}

/** A pipeline's stages in order: the default pipeline unless one is named. An unknown pipeline has none. */
export async function pipelineStages(em: EntityManager, pipelineId?: string): Promise<readonly StageRow[]> {
  const key = `${currentOrg(em)}:${pipelineId ?? ''}`;
  const cached = recentStages.get(key);
  if (cached) return cached;
  const stages = (await stagesOf(em, { pipeline_id: pipelineId || undefined })) as StageRow[];
  // Shared by every request that reads it: frozen, so none can change what the others see.
  const frozen = Object.freeze(stages.map((stage) => Object.freeze(stage)));
  if (frozen.length > 0) recentStages.set(key, frozen);
  return frozen;
}

/**
 * The stage a deal should sit in: the requested one, which must belong to the pipeline in play (the
 * one asked for, else the deal's, else the default), or that pipeline's first stage. A stage of another
 * pipeline or organization is a 400 that does not tell the two apart. One query.
 */
export async function resolveStage(
  em: EntityManager,
  requested: { pipelineId?: string | undefined; stageId?: string | undefined },
  currentPipelineId?: string,
): Promise<{ stage: StageRow; stages: readonly StageRow[] }> {
  const pipelineId = requested.pipelineId ?? currentPipelineId;
  const stages = await pipelineStages(em, pipelineId);
  const first = stages[0];
  if (!first) {
    if (requested.pipelineId) throw new ApiError('invalid_request', 'pipeline_id: no such pipeline');
    // Every organization gets a default pipeline with stages at creation: a broken invariant, not bad input.
    throw new Error(`pipeline ${pipelineId ?? '(default)'} has no stages`);
  }
  if (!requested.stageId) return { stage: first, stages };
  const stage = stages.find((s) => s.id === requested.stageId);
  if (!stage)
    throw new ApiError('invalid_request', `stage_id: no such stage in pipeline ${first.pipeline_id}`);
  return { stage, stages };
}

/**
 * The lifecycle a stage implies, given its pipeline's stages in order: the first open stage is lead,
 * other open stages opportunity, a won stage customer, a lost stage lost.
 */
export function lifecycleForStage(
  stage: Pick<StageRow, 'id' | 'stage_type'>,
  stages: readonly StageRow[],
): (typeof LIFECYCLE_STAGES)[number] {
  if (stage.stage_type === 'won') return 'customer';
  if (stage.stage_type === 'lost') return 'lost';
  const firstOpen = stages.find((s) => s.stage_type === 'open');
  return firstOpen?.id === stage.id ? 'lead' : 'opportunity';
}
