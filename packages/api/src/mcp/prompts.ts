import type { GetPromptResult, Prompt } from '@modelcontextprotocol/sdk/types.js';

/**
 * Ready-made tasks for an agent: each says which tools to call, in which order, and what to make of
 * the answers. Tool names are the operations' ids, as `tools/list` gives them.
 */
interface PromptSpec extends Prompt {
  text(args: Record<string, string | undefined>): string;
}

const PROMPTS: PromptSpec[] = [
  {
    name: 'meeting-prep',
    title: 'Prepare for a meeting on a deal',
    description:
      'A one-page brief for a meeting on one deal: where it stands, who is involved, risks, what to ask.',
    arguments: [
      { name: 'deal_id', description: 'The deal’s id (find it with the search tool)', required: true },
    ],
    text: ({ deal_id }) =>
      `Prepare me for a meeting on deal ${deal_id}.\n\n` +
      `1. Call deals-get with {"id": "${deal_id}"} for the deal, its stakeholders and its latest activities.\n` +
      `2. Call ai-analyze with {"id": "${deal_id}"} for the MEDDPICC scores, risks and recommended actions.\n` +
      `3. Call ai-predict with {"id": "${deal_id}"} for the win probability and the factors for and against.\n\n` +
      'Then write a brief: the deal in two sentences (stage, value, expected close); each stakeholder with role, ' +
      'influence and sentiment; the three biggest risks with the evidence for each; the questions to ask in the ' +
      'meeting to close the weakest MEDDPICC pillars; the next step to propose. Use only what the tools returned.',
  },
  {
    name: 'pipeline-review',
    title: 'Weekly pipeline review',
    description: 'Review the open pipeline: what closes this week, what is stuck, where the value is.',
    arguments: [],
    text: () =>
      'Run a weekly pipeline review.\n\n' +
      '1. Call pipeline-health for the deals and value per stage, the weighted value and the stale deals.\n' +
      '2. Call ai-briefing for the deals closing this week, the stale and at-risk deals and the recent signals.\n' +
      '3. For each at-risk deal worth discussing, call deals-get with its id for its stakeholders and activity.\n\n' +
      'Then write the review: the pipeline in numbers (open value, weighted value, change since last week if the ' +
      'signals show it); deals to close this week with what each still needs; stuck deals with the reason and an ' +
      'owner’s next step; a short list of decisions for the team.',
  },
  {
    name: 'coaching-review',
    title: 'Coaching review of the sales team',
    description: 'What each rep does well and where to coach, from the team’s deals.',
    arguments: [{ name: 'owner_name', description: 'Only this rep (optional)', required: false }],
    text: ({ owner_name }) =>
      `Prepare a coaching review${owner_name ? ` for ${owner_name}` : ' of the sales team'}.\n\n` +
      '1. Call ai-coaching for the per-owner patterns and suggestions.\n' +
      `2. Call deals-list to see ${owner_name ? `${owner_name}’s` : 'the'} open deals, and ai-analyze on the two or three largest to ground the advice in real deals.\n\n` +
      'Then write, per rep: two strengths with the evidence, the one habit to change with a concrete example from ' +
      'a deal, and a goal for the next two weeks. Be specific and kind; quote only what the tools returned.',
  },
];

export function listPrompts(): Prompt[] {
  return PROMPTS.map(({ text: _text, ...prompt }) => prompt);
}

/** The prompt's message, or undefined for an unknown prompt; throws for a missing required argument. */
export function getPrompt(name: string, args: Record<string, string> = {}): GetPromptResult | undefined {
  const prompt = PROMPTS.find((p) => p.name === name);
  if (!prompt) return undefined;
  const missing = (prompt.arguments ?? []).filter((a) => a.required && !args[a.name]).map((a) => a.name);
  if (missing.length > 0)
    throw new Error(`Missing argument${missing.length > 1 ? 's' : ''}: ${missing.join(', ')}`);
  return {
    description: prompt.description,
    messages: [{ role: 'user', content: { type: 'text', text: prompt.text(args) } }],
  };
}
