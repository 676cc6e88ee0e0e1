import { ChatPromptTemplate } from '@langchain/core/prompts';

export const analysisPrompt = ChatPromptTemplate.fromMessages([
  [
    'system',
    'You write for sales reps in a CRM. You are given the computed MEDDPICC analysis of one deal as JSON. ' +
      'Use only these facts: never invent names, numbers, dates or events, and keep every number you use exactly. ' +
      'Answer with the requested structure only.',
  ],
  [
    'human',
    'Deal analysis facts:\n{facts}\n\n' +
      'Write `summary`: two or three plain sentences on where the deal stands and why. ' +
      'Write `recommended_actions`: reword each item of `recommended_actions` as a concrete next step, ' +
      'in the same order, one for one, keeping its numbers.',
  ],
]);
