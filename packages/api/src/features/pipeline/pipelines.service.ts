import { type EntityManager, type StageType, sqlOf, transaction, uuidv7 } from '@crm/db';
import { sql } from 'kysely';
import { ApiError, notFound } from '../../errors.ts';
import { currentOrg, lockForOrg, orgDb, orgQuery } from '../../org-scope.ts';
import { updateDeal } from '../deals/deals.service.ts';
import {
  MAX_PIPELINES,
  MAX_STAGES,
  type PipelineCreateInput,
  type PipelineDto,
  type PipelineUpdateInput,
  type StageCreateInput,
  type StageDeleteInput,
  type StageDto,
  type StageInput,
  type StageUpdateInput,
} from './pipeline.schemas.ts';
import { contractStage } from './pipeline.service.ts';
import { forgetStages } from './stages.service.ts';

/**
 * The pipelines API (docs/api/pipelines.md): an organization's pipelines and their stages, read and
 * written. Every write runs in one transaction that first takes the organization's pipelines lock, so
 * writes of one organization's pipelines happen one after another (positions, the default, counts: no two
 * writers see the same "before"), and then forgets the stages this process remembers for deal writes.
 */

/** A stage's colour when none is given (the default pipeline's Lead grey). */
const DEFAULT_COLOR = '#94a3b8';
/** A stage's probability when none is given: certain for won, none for lost, unknown for open. */
const DEFAULT_PROBABILITY: Record<StageType, number | null> = { open: null, won: 100, lost: 0 };

const pipelineRows = orgQuery((db, a: { id?: string }) => {
  const q = db
    .selectFrom('pipelines')
    .select(['id', 'name', 'is_default', 'created_at'])
    // The default first, then by age.
    .orderBy('is_default', 'desc')
    .orderBy('created_at')
    .orderBy('id');
  return a.id ? q.where('id', '=', a.id) : q;
});

/** Stages in order, each with its deal count read from the kept counts (deal_counts, by their primary key). */
const stageRows = orgQuery((db, a: { pipeline_id?: string; stage_id?: string }) => {
  let q = db
    .selectFrom('pipeline_stages as s')
    .select((eb) => [
      's.id',
      's.pipeline_id',
      's.name',
      's.stage_type',
      's.position',
      's.color',
      's.probability',
      's.rotten_days',
      eb
        .selectFrom('deal_counts as c')
        .select((c) => c.fn.coalesce(c.fn.sum<string>('c.n'), sql.lit(0)).as('n'))
        .whereRef('c.pipeline_id', '=', 's.pipeline_id')
        .whereRef('c.stage_id', '=', 's.id')
        .as('deal_count'),
    ])
    .orderBy('s.pipeline_id')
    .orderBy('s.position');
  if (a.pipeline_id) q = q.where('s.pipeline_id', '=', a.pipeline_id);
  if (a.stage_id) q = q.where('s.id', '=', a.stage_id);
  return q;
});

type StageRecord = Awaited<ReturnType<typeof stageRows>>[number];
type PipelineRecord = Awaited<ReturnType<typeof pipelineRows>>[number];

function stageDto(s: StageRecord): StageDto {
  return {
    ...contractStage(s),
    pipeline_id: s.pipeline_id,
    rotten_days: s.rotten_days ?? null,
    deal_count: Number(s.deal_count ?? 0),
  };
}

function pipelineDto(p: PipelineRecord, stages: readonly StageRecord[]): PipelineDto {
  return {
    id: p.id,
    name: p.name,
    is_default: p.is_default,
    created_at: new Date(p.created_at).toISOString(),
    stages: stages.filter((s) => s.pipeline_id === p.id).map(stageDto),
  };
}

/** Every pipeline of the organization with its stages: the default first, then oldest first. */
export async function listPipelines(em: EntityManager): Promise<PipelineDto[]> {
  const [pipelines, stages] = await Promise.all([pipelineRows(em, {}), stageRows(em, {})]);
  return pipelines.map((p) => pipelineDto(p, stages));
}

/** One pipeline with its stages; 404 for an unknown one (another organization's alike). */
export async function getPipeline(em: EntityManager, id: string): Promise<PipelineDto> {
  const [pipeline] = await pipelineRows(em, { id });
  if (!pipeline) throw notFound('Pipeline');
  return pipelineDto(pipeline, await stageRows(em, { pipeline_id: id }));
}

async function getStage(em: EntityManager, pipelineId: string, stageId: string): Promise<StageDto> {
  const [stage] = await stageRows(em, { pipeline_id: pipelineId, stage_id: stageId });
  if (!stage) throw notFound('Stage');
  return stageDto(stage);
}

/** Whether the organization has this pipeline (404 otherwise): for reads that take a pipeline_id. */
export async function requirePipeline(em: EntityManager, id: string): Promise<void> {
  const [pipeline] = await pipelineRows(em, { id });
  if (!pipeline) throw notFound('Pipeline');
}

/**
 * Runs a pipelines write: in one transaction, after the organization's pipelines lock; afterwards (also
 * when it failed) this process forgets the organization's stages it remembered, some perhaps read
 * inside the transaction.
 */
async function pipelinesWrite<T>(em: EntityManager, fn: (tx: EntityManager) => Promise<T>): Promise<T> {
  const orgId = currentOrg(em);
  try {
    return await transaction(em, async (tx) => {
      await lockForOrg(tx, 'pipelines');
      return fn(tx);
    });
  } finally {
    forgetStages(orgId);
  }
}

/**
 * The pipeline's row, locked for the transaction (FOR UPDATE when it is to be deleted: deals being
 * written into it wait, then find it gone), or 404.
 */
async function lockPipeline(tx: EntityManager, id: string, forDelete = false) {
  const q = orgDb(tx).selectFrom('pipelines').select(['id', 'name', 'is_default']).where('id', '=', id);
  const row = await (forDelete ? q.forUpdate() : q.forNoKeyUpdate()).executeTakeFirst();
  if (!row) throw notFound('Pipeline');
  return row;
}

/**
 * Locks a stage's row FOR UPDATE for the transaction: deals written into it (whose foreign key takes a
 * share lock on it) wait until the transaction ends.
 */
async function lockStage(tx: EntityManager, stageId: string): Promise<void> {
  await orgDb(tx).selectFrom('pipeline_stages').select('id').where('id', '=', stageId).forUpdate().execute();
}

/** The pipeline's stages in order, as they are in this transaction. */
function stagesIn(tx: EntityManager, pipelineId: string) {
  return orgDb(tx)
    .selectFrom('pipeline_stages')
    .select(['id', 'name', 'stage_type', 'position'])
    .where('pipeline_id', '=', pipelineId)
    .orderBy('position')
    .execute();
}

/** How many deals are in a stage (or a whole pipeline), counted from the deals themselves. */
async function dealsIn(tx: EntityManager, where: { stage_id: string } | { pipeline_id: string }) {
  const q = orgDb(tx)
    .selectFrom('deals')
    .select((eb) => eb.fn.countAll<string>().as('n'));
  const row = await ('stage_id' in where
    ? q.where('stage_id', '=', where.stage_id)
    : q.where('pipeline_id', '=', where.pipeline_id)
  ).executeTakeFirst();
  return Number(row?.n ?? 0);
}

const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;

/**
 * Gives the pipeline's stages the positions 1, 2, … in the order of `ids` (every stage of the pipeline).
 * In two statements: `(pipeline_id, position)` is unique and checked row by row, so the positions first
 * step aside (negative), then take their places.
 */
async function writePositions(tx: EntityManager, pipelineId: string, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  const db = orgDb(tx);
  await db
    .updateTable('pipeline_stages')
    .set({ position: sql<number>`-position` })
    .where('pipeline_id', '=', pipelineId)
    .execute();
  const cases = sql.join(
    ids.map((id, i) => sql`when ${id}::uuid then ${i + 1}::int`),
    sql` `,
  );
  await db
    .updateTable('pipeline_stages')
    .set({ position: sql<number>`case id ${cases} end` })
    .where('pipeline_id', '=', pipelineId)
    .execute();
}

/** `ids` with `id` moved to 1-based `position`. */
const movedTo = (ids: readonly string[], id: string, position: number) => {
  const rest = ids.filter((x) => x !== id);
  return [...rest.slice(0, position - 1), id, ...rest.slice(position - 1)];
};

function checkPosition(position: number | undefined, max: number): void {
  if (position !== undefined && position > max)
    throw new ApiError('invalid_request', `position: must be between 1 and ${max}`);
}

function stageRow(orgId: string, pipelineId: string, stage: StageInput, position: number, now: Date) {
  const stageType = stage.stage_type ?? 'open';
  return {
    id: uuidv7(),
    org_id: orgId,
    pipeline_id: pipelineId,
    name: stage.name,
    stage_type: stageType,
    position,
    color: stage.color ?? DEFAULT_COLOR,
    probability: stage.probability === undefined ? DEFAULT_PROBABILITY[stageType] : stage.probability,
    rotten_days: stage.rotten_days ?? null,
    created_at: now,
  };
}

/** The default pipeline stops being it (before another becomes it: one default per organization). */
async function clearDefault(tx: EntityManager): Promise<void> {
  await orgDb(tx)
    .updateTable('pipelines')
    .set({ is_default: false })
    .where(sql.ref<boolean>('is_default'))
    .execute();
}

export function createPipeline(em: EntityManager, input: PipelineCreateInput): Promise<PipelineDto> {
  return pipelinesWrite(em, async (tx) => {
    const orgId = currentOrg(tx);
    const count = await orgDb(tx)
      .selectFrom('pipelines')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirst();
    if (Number(count?.n ?? 0) >= MAX_PIPELINES)
      throw new ApiError('conflict', `An organization has at most ${MAX_PIPELINES} pipelines`);
    if (input.is_default) await clearDefault(tx);
    const now = new Date();
    const id = uuidv7();
    await sqlOf(tx)
      .insertInto('pipelines')
      .values({ id, org_id: orgId, name: input.name, is_default: input.is_default ?? false, created_at: now })
      .execute();
    await sqlOf(tx)
      .insertInto('pipeline_stages')
      .values(input.stages.map((stage, i) => stageRow(orgId, id, stage, i + 1, now)))
      .execute();
    return getPipeline(tx, id);
  });
}

export function updatePipeline(
  em: EntityManager,
  { id, ...input }: PipelineUpdateInput,
): Promise<PipelineDto> {
  return pipelinesWrite(em, async (tx) => {
    const pipeline = await lockPipeline(tx, id);
    if (input.is_default === false && pipeline.is_default)
      throw new ApiError(
        'conflict',
        'is_default: an organization always has a default pipeline; make another one the default instead (PATCH it with is_default: true)',
      );
    if (input.is_default && !pipeline.is_default) await clearDefault(tx);
    const set = {
      ...(input.name !== undefined ? { name: input.name } : {}),
      ...(input.is_default ? { is_default: true } : {}),
    };
    if (Object.keys(set).length > 0)
      await orgDb(tx).updateTable('pipelines').set(set).where('id', '=', id).execute();
    return getPipeline(tx, id);
  });
}

/**
 * Deletes a pipeline with its stages. The default pipeline cannot be deleted, nor one that deals are in
 * (409 with their count): moving them elsewhere is the client's choice, deal by deal
 * (docs/api/pipelines.md says why there is no `move_to` here).
 */
export function deletePipeline(em: EntityManager, id: string): Promise<void> {
  return pipelinesWrite(em, async (tx) => {
    const pipeline = await lockPipeline(tx, id, true);
    if (pipeline.is_default)
      throw new ApiError(
        'conflict',
        'The default pipeline cannot be deleted; make another one the default first (PATCH /pipelines/{id} with is_default: true)',
      );
    const deals = await dealsIn(tx, { pipeline_id: id });
    if (deals > 0)
      throw new ApiError(
        'conflict',
        `${plural(deals, 'deal')} ${deals === 1 ? 'is' : 'are'} in pipeline "${pipeline.name}": move ${deals === 1 ? 'it' : 'them'} to another pipeline (PATCH /deals/{id} with pipeline_id) or delete ${deals === 1 ? 'it' : 'them'} first`,
      );
    // Its stages go with it (ON DELETE CASCADE), and their kept counts with them (a trigger).
    await orgDb(tx).deleteFrom('pipelines').where('id', '=', id).execute();
  });
}

export function createStage(
  em: EntityManager,
  { id, position, ...stage }: StageCreateInput,
): Promise<StageDto> {
  return pipelinesWrite(em, async (tx) => {
    await lockPipeline(tx, id);
    const stages = await stagesIn(tx, id);
    if (stages.length >= MAX_STAGES)
      throw new ApiError('conflict', `A pipeline has at most ${MAX_STAGES} stages`);
    checkPosition(position, stages.length + 1);
    // At the end first (a free position), then moved into its place.
    const row = stageRow(currentOrg(tx), id, stage, stages.length + 1, new Date());
    await sqlOf(tx).insertInto('pipeline_stages').values(row).execute();
    if (position !== undefined && position <= stages.length)
      await writePositions(tx, id, movedTo([...stages.map((s) => s.id), row.id], row.id, position));
    return getStage(tx, id, row.id);
  });
}

export function updateStage(
  em: EntityManager,
  { id, stage_id, position, ...fields }: StageUpdateInput,
): Promise<StageDto> {
  return pipelinesWrite(em, async (tx) => {
    await lockPipeline(tx, id);
    const stages = await stagesIn(tx, id);
    const stage = stages.find((s) => s.id === stage_id);
    if (!stage) throw notFound('Stage');
    checkPosition(position, stages.length);
    if (fields.stage_type !== undefined && fields.stage_type !== stage.stage_type) {
      // The deals in it would be won or lost (or reopened) without a move of their own: no event, no
      // activity, their lifecycle as it was. They move first, each with its own events. The stage is
      // locked before they are counted: a deal being written into it is counted, or waits.
      await lockStage(tx, stage_id);
      const deals = await dealsIn(tx, { stage_id });
      if (deals > 0)
        throw new ApiError(
          'conflict',
          `stage_type: ${plural(deals, 'deal')} ${deals === 1 ? 'is' : 'are'} in stage "${stage.name}"; a stage changes its type only when empty (move the deals to another stage first)`,
        );
    }
    const set = {
      ...(fields.name !== undefined ? { name: fields.name } : {}),
      ...(fields.stage_type !== undefined ? { stage_type: fields.stage_type } : {}),
      ...(fields.color !== undefined ? { color: fields.color } : {}),
      ...(fields.probability !== undefined ? { probability: fields.probability } : {}),
      ...(fields.rotten_days !== undefined ? { rotten_days: fields.rotten_days } : {}),
    };
    if (Object.keys(set).length > 0)
      await orgDb(tx).updateTable('pipeline_stages').set(set).where('id', '=', stage_id).execute();
    if (position !== undefined && position !== stage.position)
      await writePositions(
        tx,
        id,
        movedTo(
          stages.map((s) => s.id),
          stage_id,
          position,
        ),
      );
    return getStage(tx, id, stage_id);
  });
}

/**
 * Deletes a stage. The deals in it move to `move_to` (another stage of the same pipeline; without one, a
 * stage with deals is a 409 naming how many), each by the deal update a PATCH of its stage_id makes: its
 * stage_changed activity, deal.updated and deal.stage_changed (and deal.won or deal.lost) events, its
 * lifecycle. The stages after it move up one. A pipeline keeps at least one stage.
 */
export function deleteStage(
  em: EntityManager,
  { id, stage_id, move_to }: StageDeleteInput,
): Promise<{ moved_deals: number }> {
  return pipelinesWrite(em, async (tx) => {
    await lockPipeline(tx, id);
    const stages = await stagesIn(tx, id);
    const stage = stages.find((s) => s.id === stage_id);
    if (!stage) throw notFound('Stage');
    if (move_to !== undefined) {
      if (move_to === stage_id)
        throw new ApiError('invalid_request', 'move_to: must be another stage than the one deleted');
      if (!stages.some((s) => s.id === move_to))
        throw new ApiError('invalid_request', `move_to: no such stage in pipeline ${id}`);
    }
    if (stages.length === 1)
      throw new ApiError(
        'conflict',
        'A pipeline keeps at least one stage: add another before deleting this one, or delete the pipeline',
      );
    // The stage locked first: a deal being written into it waits for this transaction, then finds it gone.
    await lockStage(tx, stage_id);
    // The deals in it, locked in id order: one a concurrent PATCH moved out meanwhile is not moved again.
    const deals = await orgDb(tx)
      .selectFrom('deals')
      .select('id')
      .where('stage_id', '=', stage_id)
      .orderBy('id')
      .forNoKeyUpdate()
      .execute();
    if (deals.length > 0) {
      if (move_to === undefined)
        throw new ApiError(
          'conflict',
          `${plural(deals.length, 'deal')} ${deals.length === 1 ? 'is' : 'are'} in stage "${stage.name}": pass move_to (another stage of pipeline ${id}) to move ${deals.length === 1 ? 'it' : 'them'} there`,
        );
      // The code path of PATCH /deals/{id} {stage_id}, in this transaction: nothing moves unless all do.
      for (const deal of deals) await updateDeal(tx, deal.id, { stage_id: move_to });
    }
    await orgDb(tx).deleteFrom('pipeline_stages').where('id', '=', stage_id).execute();
    await writePositions(
      tx,
      id,
      stages.filter((s) => s.id !== stage_id).map((s) => s.id),
    );
    return { moved_deals: deals.length };
  });
}
