import type { LanguageModelConfig } from '@crm/config';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { ChatOpenAI } from '@langchain/openai';

/**
 * The optional language model that words the narrative parts: any OpenAI-compatible chat endpoint
 * (OpenAI itself, or a local model server). No retries: a slow or failing model falls back to the
 * built-in text at once instead of holding the request.
 */
export function createLanguageModel(config: LanguageModelConfig | undefined): BaseChatModel | undefined {
  if (!config) return undefined;
  return new ChatOpenAI({
    model: config.model,
    // Local servers take any key; the client library insists on one.
    apiKey: config.apiKey ?? 'unused',
    ...(config.baseUrl ? { configuration: { baseURL: config.baseUrl } } : {}),
    timeout: config.timeoutMs,
    maxRetries: 0,
    temperature: 0,
  });
}
