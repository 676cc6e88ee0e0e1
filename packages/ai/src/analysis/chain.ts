import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { type Runnable, RunnableLambda, RunnableSequence } from '@langchain/core/runnables';
import { type DealHistory, snapshotAt } from '../history.ts';
import { rewordsEach } from '../narrative/checks.ts';
import { type NarrativeSource, narrativeStep } from '../narrative/narrate.ts';
import { type BuiltInPrediction, type FittedWinModel, predictSnapshot } from '../prediction/model.ts';
import { analyzeSnapshot, type BuiltInAnalysis, type DealHealth } from './model.ts';
import { analysisPrompt } from './prompt.ts';
import { AnalysisNarrative, AnalysisResult } from './schema.ts';

export interface AnalysisInput {
  history: DealHistory;
  asOf: Date;
  staleAfterDays: number;
  winModel: FittedWinModel | null;
}

export interface AnalysisOutput {
  result: AnalysisResult;
  dealHealth: DealHealth;
  prediction: BuiltInPrediction;
  narrativeSource: NarrativeSource;
}

interface Computed {
  input: AnalysisInput;
  analysis: BuiltInAnalysis;
  prediction: BuiltInPrediction;
}

/** The facts the narrative is written from: everything computed, nothing else. */
const factsOf = ({ input, analysis, prediction }: Computed) => ({
  deal: {
    title: input.history.deal.title,
    company: input.history.deal.companyName,
    stage: input.history.stageName,
  },
  total_score: analysis.total_score,
  score_band: analysis.score_band,
  deal_health: analysis.deal_health,
  win_probability: prediction.win_probability,
  pillars: analysis.pillar_analyses.map((p) => ({ pillar: p.label, score: p.score, evidence: p.evidence })),
  risk_factors: analysis.risk_factors,
  win_factors: analysis.win_factors,
  stage_readiness: analysis.stage_readiness,
  recommended_actions: analysis.recommended_actions,
  summary: analysis.summary,
});
type AnalysisFacts = ReturnType<typeof factsOf>;

/**
 * Deal analysis as a chain: snapshot and built-in MEDDPICC model (with the win probability from the
 * prediction model), then the narrative (language model or built-in), then the contract's schema.
 */
export function analysisChain(model?: BaseChatModel): Runnable<AnalysisInput, AnalysisOutput> {
  const narrate = narrativeStep<AnalysisFacts, AnalysisNarrative>({
    model,
    prompt: analysisPrompt,
    schema: AnalysisNarrative,
    name: 'deal_analysis',
    builtIn: (facts) => ({ summary: facts.summary, recommended_actions: facts.recommended_actions }),
    fits: (n, facts) => rewordsEach(facts.recommended_actions, n.recommended_actions),
  });
  return RunnableSequence.from([
    RunnableLambda.from((input: AnalysisInput): Computed => {
      const snapshot = snapshotAt(input.history, input.asOf);
      return {
        input,
        analysis: analyzeSnapshot(snapshot, {
          staleAfterDays: input.staleAfterDays,
          typicalStageDays: input.winModel?.context.stageDays,
        }),
        prediction: predictSnapshot(snapshot, {
          staleAfterDays: input.staleAfterDays,
          winModel: input.winModel,
        }),
      };
    }).withConfig({ runName: 'deal_analysis_built_in_model' }),
    RunnableLambda.from(async (computed: Computed, config): Promise<AnalysisOutput> => {
      const { narrative, source } = await narrate.invoke(factsOf(computed), config);
      const { input, analysis, prediction } = computed;
      const deal = input.history.deal;
      const result = AnalysisResult.parse({
        deal: { id: deal.id, title: deal.title, company_name: deal.companyName },
        win_probability: prediction.win_probability,
        total_score: analysis.total_score,
        score_band: analysis.score_band,
        breakdown: { ...analysis.breakdown, deal_health: analysis.deal_health },
        summary: narrative.summary,
        recommended_actions: narrative.recommended_actions,
        risk_factors: analysis.risk_factors,
        win_factors: analysis.win_factors,
        pillar_analyses: analysis.pillar_analyses,
        stage_readiness: analysis.stage_readiness,
      });
      return { result, dealHealth: analysis.deal_health, prediction, narrativeSource: source };
    }).withConfig({ runName: 'deal_analysis_result' }),
  ]);
}
