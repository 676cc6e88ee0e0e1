import type { EntityManager } from '@crm/db';
import { sql } from 'kysely';
import { orgQuery } from '../../org-scope.ts';

/** The update of storeDealScores; without `dealHealth`, the deal's health stays as it is. */
const updateScores = orgQuery((db, a: { id: string; winProbability: number; dealHealth?: string }) => {
  const winProbability = sql<number>`${a.winProbability}::integer`;
  const health = a.dealHealth ? sql<string>`${a.dealHealth}::text` : sql.ref<string>('d.deal_health');
  return db
    .with('target', (qc) => qc.selectFrom('deals').select('id').where('id', '=', a.id))
    .updateTable('deals as d')
    .set({
      win_probability: winProbability,
      deal_health: health,
      updated_at: sql<Date>`case
         when ${sql.ref('d.win_probability')} is distinct from ${winProbability} or ${sql.ref('d.deal_health')} is distinct from ${health}
         then now() else ${sql.ref('d.updated_at')} end`,
    })
    .from('target')
    .whereRef('d.id', '=', 'target.id')
    .returning('d.id');
});

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
  const rows = await updateScores(em, {
    id: dealId,
    winProbability: scores.winProbability,
    dealHealth: scores.dealHealth,
  });
  return rows.length > 0;
}
