import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { type Runnable, RunnableLambda, RunnableSequence } from '@langchain/core/runnables';
import { keepsNumbers } from '../narrative/checks.ts';
import { type NarrativeSource, narrativeStep } from '../narrative/narrate.ts';
import { type BriefingFacts, type BuiltInBriefing, buildBriefing } from './model.ts';
import { briefingPrompt } from './prompt.ts';
import { BriefingNarrative, BriefingResult } from './schema.ts';

export interface BriefingOutput {
  result: BriefingResult;
  narrativeSource: NarrativeSource;
}

interface Computed {
  facts: BriefingFacts;
  briefing: BuiltInBriefing;
}

const factsOf = ({ facts, briefing }: Computed) => ({
  date: facts.now.toISOString().slice(0, 10),
  headline: briefing.headline,
  greeting: briefing.greeting,
  summary: facts.summary,
  signals_last_7_days: facts.signals,
  closing_this_week: briefing.closing_this_week.map((d) => `${d.title}: ${d.reason}`),
  at_risk_deals: briefing.at_risk_deals.map((d) => `${d.title}: ${d.reason}`),
});
type Facts = ReturnType<typeof factsOf>;

/** Daily briefing as a chain: built-in lists and reasons, the greeting's wording, the contract's schema. */
export function briefingChain(model?: BaseChatModel): Runnable<BriefingFacts, BriefingOutput> {
  const narrate = narrativeStep<Facts, BriefingNarrative>({
    model,
    prompt: briefingPrompt,
    schema: BriefingNarrative,
    name: 'daily_briefing',
    builtIn: (facts) => ({ greeting: facts.greeting }),
    fits: (n, facts) => keepsNumbers(facts.headline, n.greeting),
  });
  return RunnableSequence.from([
    RunnableLambda.from(
      (facts: BriefingFacts): Computed => ({ facts, briefing: buildBriefing(facts) }),
    ).withConfig({
      runName: 'daily_briefing_built_in_model',
    }),
    RunnableLambda.from(async (computed: Computed, config): Promise<BriefingOutput> => {
      const { narrative, source } = await narrate.invoke(factsOf(computed), config);
      const { facts, briefing } = computed;
      const result = BriefingResult.parse({
        greeting: narrative.greeting,
        summary: facts.summary,
        closing_this_week: briefing.closing_this_week,
        stale_deals: briefing.stale_deals,
        at_risk_deals: briefing.at_risk_deals,
        signals_last_7_days: facts.signals,
      });
      return { result, narrativeSource: source };
    }).withConfig({ runName: 'daily_briefing_result' }),
  ]);
}
