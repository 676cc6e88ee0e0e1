import type { PredictionResult } from '@crm/ai';
import type { AuthedContext } from '../../context.ts';
import { notFound } from '../../errors.ts';
import { loadDealHistory } from './deal-history.queries.ts';
import { storeDealScores } from './deal-scores.ts';
import { aiRuntime } from './runtime.ts';

/** POST /deals/{id}/predict: the prediction, stored as the deal's win_probability (one statement). */
export async function predictDeal(ctx: AuthedContext, dealId: string): Promise<PredictionResult> {
  const runtime = aiRuntime(ctx.services);
  const history = await loadDealHistory(ctx.em, dealId);
  if (!history) throw notFound('Deal');
  const winModel = await runtime.winModels.current(ctx.em);
  const { result } = await runtime.prediction.invoke({
    history,
    asOf: new Date(),
    staleAfterDays: ctx.services.config.staleThresholdDays,
    winModel,
  });
  const stored = await storeDealScores(ctx.em, dealId, {
    winProbability: result.win_probability,
    dealHealth: undefined,
  });
  if (!stored) throw notFound('Deal');
  return result;
}
