import { ChatPromptTemplate } from '@langchain/core/prompts';

export const predictionPrompt = ChatPromptTemplate.fromMessages([
  [
    'system',
    'You write for sales reps in a CRM. You are given a computed win prediction for one deal as JSON, with ' +
      'the factors behind it. Use only these facts; never invent names, numbers or events. ' +
      'Answer with the requested structure only.',
  ],
  [
    'human',
    'Win prediction facts:\n{facts}\n\n' +
      'Write `actions`: reword each item of `recommendations` (its `action`, in the light of its `reason`) ' +
      'as one concrete next step, in the same order, one for one, keeping its numbers.',
  ],
]);
