import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { ChatPromptTemplate } from '@langchain/core/prompts';
import { type Runnable, RunnableLambda, RunnableSequence } from '@langchain/core/runnables';
import type { z } from 'zod';
import { breakerOf } from './language-model.ts';

export type NarrativeSource = 'language_model' | 'built_in';
export interface Narrated<N> {
  narrative: N;
  source: NarrativeSource;
}

export interface NarrativeStep<F, N> {
  /** The language model, or undefined to always use the built-in text. */
  model: BaseChatModel | undefined;
  /** Takes `{ facts }`: the computed facts as JSON. */
  prompt: ChatPromptTemplate;
  schema: z.ZodType<N>;
  /** The wording without a model, from the same facts. */
  builtIn: (facts: F) => N;
  /** Checks beyond the schema, e.g. one phrasing per computed action; false rejects the answer. */
  fits?: (narrative: N, facts: F) => boolean;
  name: string;
  timeoutMs?: number;
}

/**
 * A runnable from computed facts to their wording. With a model: prompt, model with structured output,
 * then the zod schema and the fit check; any timeout, error or invalid answer falls back to the built-in
 * wording, so the result is always correct; so does a model paused after timeouts (createLanguageModel).
 */
export function narrativeStep<F, N>(step: NarrativeStep<F, N>): Runnable<F, Narrated<N>> {
  const builtIn = RunnableLambda.from(
    (facts: F): Narrated<N> => ({ narrative: step.builtIn(facts), source: 'built_in' }),
  ).withConfig({ runName: `${step.name}_built_in` });
  if (!step.model) return builtIn;

  const ask = RunnableSequence.from([
    step.prompt,
    step.model.withStructuredOutput(step.schema as z.ZodType<N & Record<string, unknown>>, {
      name: step.name,
    }),
  ]);
  const breaker = breakerOf(step.model);
  const viaModel = RunnableLambda.from(async (facts: F, config): Promise<Narrated<N>> => {
    const question = () => ask.invoke({ facts: JSON.stringify(facts) }, config);
    // While the model is paused (hung), this throws at once and the built-in text answers.
    const answer = breaker ? await breaker.execute(question) : await question();
    // Parsed again: the answer is the model's, and only a schema-valid one may reach the response.
    const narrative = step.schema.parse(answer);
    if (step.fits && !step.fits(narrative, facts))
      throw new Error(`${step.name}: answer does not fit the facts`);
    return { narrative, source: 'language_model' };
  }).withConfig({ runName: `${step.name}_language_model` });
  return viaModel.withFallbacks([builtIn]);
}
