import type { AnalysisResult } from '@crm/ai';
import { sqlOf, uuidv7 } from '@crm/db';
import { recordActivity } from '../../activities.ts';
import type { AuthedContext } from '../../context.ts';
import { notFound } from '../../errors.ts';
import { emitEvent } from '../../events.ts';
import { loadDealHistory } from './deal-history.queries.ts';
import { storeDealScores } from './deal-scores.ts';
import { aiRuntime } from './runtime.ts';

/**
 * POST /deals/{id}/analyze. The inputs are read and the chain runs (a language model may take seconds)
 * before the transaction opens; the transaction then stores the analysis, the deal's deal_health and
 * win_probability, a `deal_analyzed` activity and the analysis.completed event, all or nothing.
 */
export async function analyzeDeal(ctx: AuthedContext, dealId: string): Promise<AnalysisResult> {
  const runtime = aiRuntime(ctx.services);
  const history = await loadDealHistory(ctx.em, dealId);
  if (!history) throw notFound('Deal');
  const winModel = await runtime.winModels.current(ctx.em);
  const out = await runtime.analysis.invoke({
    history,
    asOf: new Date(),
    staleAfterDays: ctx.services.config.staleThresholdDays,
    winModel,
  });
  const { result } = out;
  await ctx.em.transactional(async (em) => {
    const stored = await storeDealScores(em, dealId, {
      winProbability: out.prediction.win_probability,
      dealHealth: out.dealHealth,
    });
    if (!stored) throw notFound('Deal');
    const now = new Date();
    await sqlOf(em)
      .insertInto('deal_analyses')
      .values({
        id: uuidv7(),
        org_id: ctx.principal.orgId,
        deal_id: dealId,
        total_score: result.total_score,
        score_band: result.score_band,
        deal_health: out.dealHealth,
        win_probability: result.win_probability,
        narrative_source: out.narrativeSource,
        result: result as unknown as Record<string, unknown>,
        created_at: now,
      })
      .execute();
    // A plain deal reference: the activity is recorded, but the deal's activity clock stays where it was.
    await recordActivity(
      em,
      { id: dealId, orgId: ctx.principal.orgId },
      {
        type: 'deal_analyzed',
        description:
          `Analyzed: score ${result.total_score}/100 (${result.score_band}), health ${out.dealHealth}, ` +
          `win probability ${result.win_probability}%`,
      },
      now,
    );
    await emitEvent(em, { type: 'analysis.completed', data: { deal_id: dealId, ...result } }, now);
  });
  return result;
}
