import { ChatPromptTemplate } from '@langchain/core/prompts';

export const briefingPrompt = ChatPromptTemplate.fromMessages([
  [
    'system',
    'You write the opening line of a sales team’s daily CRM briefing. Use only the facts given as JSON; ' +
      'never invent names or numbers, and keep every number of the headline exactly. ' +
      'Answer with the requested structure only.',
  ],
  [
    'human',
    'Briefing facts:\n{facts}\n\nWrite `greeting`: one or two friendly sentences built on `headline`.',
  ],
]);
