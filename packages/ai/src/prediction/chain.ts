import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { type Runnable, RunnableLambda, RunnableSequence } from '@langchain/core/runnables';
import { type DealHistory, snapshotAt } from '../history.ts';
import { rewordsEach } from '../narrative/checks.ts';
import { type NarrativeSource, narrativeStep } from '../narrative/narrate.ts';
import { type BuiltInPrediction, type FittedWinModel, predictSnapshot } from './model.ts';
import { predictionPrompt } from './prompt.ts';
import { PredictionNarrative, PredictionResult } from './schema.ts';

export interface PredictionInput {
  history: DealHistory;
  asOf: Date;
  staleAfterDays: number;
  winModel: FittedWinModel | null;
}

export interface PredictionOutput {
  result: PredictionResult;
  method: BuiltInPrediction['method'];
  narrativeSource: NarrativeSource;
}

interface Computed {
  input: PredictionInput;
  prediction: BuiltInPrediction;
}

const factsOf = ({ input, prediction }: Computed) => ({
  deal: {
    title: input.history.deal.title,
    company: input.history.deal.companyName,
    stage: input.history.stageName,
  },
  win_probability: prediction.win_probability,
  confidence: prediction.confidence,
  risk_factors: prediction.risk_factors,
  positive_indicators: prediction.positive_indicators,
  recommendations: prediction.recommendations,
});
type PredictionFacts = ReturnType<typeof factsOf>;

/** Win prediction as a chain: snapshot and built-in model (fitted or prior), narrative, contract schema. */
export function predictionChain(model?: BaseChatModel): Runnable<PredictionInput, PredictionOutput> {
  const narrate = narrativeStep<PredictionFacts, PredictionNarrative>({
    model,
    prompt: predictionPrompt,
    schema: PredictionNarrative,
    name: 'win_prediction',
    builtIn: (facts) => ({ actions: facts.recommendations.map((r) => r.action) }),
    fits: (n, facts) =>
      rewordsEach(
        facts.recommendations.map((r) => r.action),
        n.actions,
      ),
  });
  return RunnableSequence.from([
    RunnableLambda.from(
      (input: PredictionInput): Computed => ({
        input,
        prediction: predictSnapshot(snapshotAt(input.history, input.asOf), {
          staleAfterDays: input.staleAfterDays,
          winModel: input.winModel,
        }),
      }),
    ).withConfig({ runName: 'win_prediction_built_in_model' }),
    RunnableLambda.from(async (computed: Computed, config): Promise<PredictionOutput> => {
      const { narrative, source } = await narrate.invoke(factsOf(computed), config);
      const { input, prediction } = computed;
      const deal = input.history.deal;
      const result = PredictionResult.parse({
        deal: { id: deal.id, title: deal.title, company_name: deal.companyName },
        win_probability: prediction.win_probability,
        confidence: prediction.confidence,
        risk_factors: prediction.risk_factors,
        positive_indicators: prediction.positive_indicators,
        recommendations: prediction.recommendations.map((r, i) => ({
          ...r,
          action: narrative.actions[i] ?? r.action,
        })),
      });
      return { result, method: prediction.method, narrativeSource: source };
    }).withConfig({ runName: 'win_prediction_result' }),
  ]);
}
