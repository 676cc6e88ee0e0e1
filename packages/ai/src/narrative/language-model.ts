import type { LanguageModelConfig } from '@crm/config';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { ChatOpenAI } from '@langchain/openai';
import { type CircuitBreakerPolicy, ConsecutiveBreaker, circuitBreaker, handleWhen } from 'cockatiel';

/** This many calls in a row that time out mean the model is hung: it is left alone for a while. */
export const MODEL_TIMEOUTS_IN_A_ROW = 2;
/** How long a hung model is left alone before one call tries it again (the others use the built-in text). */
export const MODEL_PAUSE_MS = 30_000;

/** What the server hears of the model's state (to log it). */
export interface LanguageModelEvents {
  /** It timed out MODEL_TIMEOUTS_IN_A_ROW times in a row: the built-in text answers at once for a while. */
  onHung?(): void;
  /** It answered again after a pause. */
  onAnswering?(): void;
}

const breakers = new WeakMap<BaseChatModel, CircuitBreakerPolicy>();

/** The circuit breaker of a model made by createLanguageModel (none for any other). */
export function breakerOf(model: BaseChatModel): CircuitBreakerPolicy | undefined {
  return breakers.get(model);
}

/**
 * The optional language model that words the narrative parts: any OpenAI-compatible chat endpoint
 * (OpenAI itself, or a local model server). No retries: a slow or failing model falls back to the
 * built-in text at once instead of holding the request. A model that stops answering (timeouts in a row)
 * is not asked for MODEL_PAUSE_MS, so the AI calls answer at once instead of each waiting out its timeout;
 * errors it answers quickly, and answers that do not fit, leave it be.
 */
export function createLanguageModel(
  config: LanguageModelConfig | undefined,
  events: LanguageModelEvents = {},
): BaseChatModel | undefined {
  if (!config) return undefined;
  const model = new ChatOpenAI({
    model: config.model,
    // Local servers take any key; the client library insists on one.
    apiKey: config.apiKey ?? 'unused',
    ...(config.baseUrl ? { configuration: { baseURL: config.baseUrl } } : {}),
    timeout: config.timeoutMs,
    maxRetries: 0,
    temperature: 0,
  });
  // @langchain/openai names the OpenAI client's timeout error TimeoutError.
  const breaker = circuitBreaker(
    handleWhen((err) => err instanceof Error && err.name === 'TimeoutError'),
    { halfOpenAfter: MODEL_PAUSE_MS, breaker: new ConsecutiveBreaker(MODEL_TIMEOUTS_IN_A_ROW) },
  );
  breaker.onBreak(() => events.onHung?.());
  breaker.onReset(() => events.onAnswering?.());
  breakers.set(model, breaker);
  return model;
}
