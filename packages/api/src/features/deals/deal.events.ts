import type { EntityManager } from '@crm/db';
import { emitEvent, type StageRef } from '../../events.ts';
import type { StageRow } from '../pipeline/stages.service.ts';
import type { DealDto } from './deal.schemas.ts';
import type { DealUpdateResult } from './deals.service.ts';

const stageRef = (s: StageRow): StageRef => ({ id: s.id, name: s.name, stage_type: s.stage_type });

/**
 * The events of a PATCH, in its transaction: deal.updated whenever something changed; for a stage
 * move also deal.stage_changed, and deal.won or deal.lost when the deal enters a won or lost stage
 * from a stage of another type. `deal` is the deal as the PATCH answers it.
 */
export async function emitDealUpdateEvents(
  em: EntityManager,
  deal: DealDto,
  update: Pick<DealUpdateResult, 'changes' | 'stageChange'>,
): Promise<void> {
  if (Object.keys(update.changes).length === 0) return;
  const at = new Date();
  await emitEvent(em, { type: 'deal.updated', data: deal, changes: update.changes }, at);
  const move = update.stageChange;
  if (!move) return;
  const stage = { from: stageRef(move.from), to: stageRef(move.to) };
  await emitEvent(em, { type: 'deal.stage_changed', data: deal, stage }, at);
  if (move.to.stage_type !== move.from.stage_type && move.to.stage_type !== 'open')
    await emitEvent(
      em,
      { type: move.to.stage_type === 'won' ? 'deal.won' : 'deal.lost', data: deal, stage },
      at,
    );
}
