import type { StageFacts } from '../src/history.ts';

/** The default pipeline every organization gets (docs/api/deals.md, "Pipeline"). */
export const DEFAULT_STAGES: StageFacts[] = [
  { name: 'Lead', type: 'open', position: 1, probability: 10 },
  { name: 'Qualified', type: 'open', position: 2, probability: 25 },
  { name: 'Proposal', type: 'open', position: 3, probability: 50 },
  { name: 'Negotiation', type: 'open', position: 4, probability: 75 },
  { name: 'Closed Won', type: 'won', position: 5, probability: 100 },
  { name: 'Closed Lost', type: 'lost', position: 6, probability: 0 },
];
