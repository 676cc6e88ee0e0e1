import {
  analysisChain,
  briefingChain,
  coachingChain,
  createLanguageModel,
  MODEL_PAUSE_MS,
  MODEL_TIMEOUTS_IN_A_ROW,
  predictionChain,
} from '@crm/ai';
import type { Services } from '../../context.ts';
import { WinModels } from './win-models.ts';

/** The AI features of one server process: the chains (sharing one language model client) and the model cache. */
export interface AiRuntime {
  analysis: ReturnType<typeof analysisChain>;
  prediction: ReturnType<typeof predictionChain>;
  briefing: ReturnType<typeof briefingChain>;
  coaching: ReturnType<typeof coachingChain>;
  winModels: WinModels;
}

const runtimes = new WeakMap<Services, AiRuntime>();

/** Built on first use from the server's services, then reused for every request. */
export function aiRuntime(services: Services): AiRuntime {
  let runtime = runtimes.get(services);
  if (!runtime) {
    const model = createLanguageModel(services.config.languageModel, {
      onHung: () =>
        services.log.warn(
          { model: services.config.languageModel?.model, timeouts_in_a_row: MODEL_TIMEOUTS_IN_A_ROW },
          `language model not answering: built-in text for ${MODEL_PAUSE_MS / 1000} s, then one call tries it again`,
        ),
      onAnswering: () =>
        services.log.info({ model: services.config.languageModel?.model }, 'language model answering again'),
    });
    runtime = {
      analysis: analysisChain(model),
      prediction: predictionChain(model),
      briefing: briefingChain(model),
      coaching: coachingChain(model),
      winModels: new WinModels(services.orm),
    };
    runtimes.set(services, runtime);
  }
  return runtime;
}
