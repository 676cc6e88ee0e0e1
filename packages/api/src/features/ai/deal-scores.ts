import type { EntityManager } from '@crm/db';
import { orgRows } from '../../read-model.ts';

/**
 * Stores what the AI derived on the deal itself. Derived fields are the deal's own data, so `updated_at`
 * moves when (and only when) one of them changes value; `last_activity_at` does not move: looking at a
 * deal is not activity with the customer, and the staleness rules read that clock. False when the deal
 * is gone (deleted meanwhile, or never the caller's).
 */
export async function storeDealScores(
  em: EntityManager,
  dealId: string,
  scores: { winProbability: number; dealHealth: string | undefined },
): Promise<boolean> {
  const health = scores.dealHealth;
  const newHealth = health === undefined ? 'd.deal_health' : '?::text';
  const rows = await orgRows<{ id: string }>(
    em,
    `with target as (select id from deals where org_id = ? and id = ?)
     update deals d set
       win_probability = ?::integer,
       deal_health = ${newHealth},
       updated_at = case
         when d.win_probability is distinct from ?::integer or d.deal_health is distinct from ${newHealth}
         then now() else d.updated_at end
     from target where d.id = target.id
     returning d.id`,
    health === undefined
      ? [dealId, scores.winProbability, scores.winProbability]
      : [dealId, scores.winProbability, health, scores.winProbability, health],
  );
  return rows.length > 0;
}
