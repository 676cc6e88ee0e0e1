import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { type Runnable, RunnableLambda, RunnableSequence } from '@langchain/core/runnables';
import { rewordsEach } from '../narrative/checks.ts';
import { type NarrativeSource, narrativeStep } from '../narrative/narrate.ts';
import { type BuiltInCoaching, buildCoaching, type CoachingFacts } from './model.ts';
import { coachingPrompt } from './prompt.ts';
import { CoachingNarrative, CoachingResult } from './schema.ts';

export interface CoachingOutput {
  result: CoachingResult;
  narrativeSource: NarrativeSource;
}

const factsOf = (c: BuiltInCoaching) => ({
  period: c.period,
  win_rate: c.win_rate,
  deals_won: c.deals_won,
  deals_lost: c.deals_lost,
  avg_cycle_days: c.avg_cycle_days,
  tips: c.coaching_tips,
});
type Facts = ReturnType<typeof factsOf>;

/** Coaching as a chain: built-in win/loss patterns and tips, the tips' wording, the contract's schema. */
export function coachingChain(model?: BaseChatModel): Runnable<CoachingFacts, CoachingOutput> {
  const narrate = narrativeStep<Facts, CoachingNarrative>({
    model,
    prompt: coachingPrompt,
    schema: CoachingNarrative,
    name: 'coaching',
    builtIn: (facts) => ({ coaching_tips: facts.tips }),
    fits: (n, facts) => rewordsEach(facts.tips, n.coaching_tips),
  });
  return RunnableSequence.from([
    RunnableLambda.from((facts: CoachingFacts) => buildCoaching(facts)).withConfig({
      runName: 'coaching_built_in_model',
    }),
    RunnableLambda.from(async (coaching: BuiltInCoaching, config): Promise<CoachingOutput> => {
      const { narrative, source } = await narrate.invoke(factsOf(coaching), config);
      return {
        result: CoachingResult.parse({ ...coaching, coaching_tips: narrative.coaching_tips }),
        narrativeSource: source,
      };
    }).withConfig({ runName: 'coaching_result' }),
  ]);
}
