import { z } from 'zod';

/** A deal in one of the briefing's lists, with why it is there. */
export const BriefingItem = z.object({
  id: z.uuid(),
  title: z.string(),
  company: z.string().nullable(),
  value: z.number().nullable(),
  currency: z.string().nullable(),
  stage: z.string().nullable(),
  reason: z.string().describe('Why the deal is listed, with the numbers behind it'),
});

/** The contract's briefing (section 2.11); list items are BriefingItems plus list-specific fields. */
export const BriefingResult = z.object({
  greeting: z.string(),
  summary: z.object({
    total_pipeline_value: z.number(),
    active_deals: z.number().int(),
    at_risk_deals: z.number().int(),
  }),
  closing_this_week: z.array(z.record(z.string(), z.unknown())),
  stale_deals: z.array(z.record(z.string(), z.unknown())),
  at_risk_deals: z.array(z.record(z.string(), z.unknown())),
  signals_last_7_days: z.object({
    positive: z.number().int(),
    negative: z.number().int(),
    competitor_mentions: z.number().int(),
  }),
});
export type BriefingResult = z.infer<typeof BriefingResult>;

export const BriefingNarrative = z.object({
  greeting: z
    .string()
    .min(10)
    .max(600)
    .describe('A short, friendly opening for the day that states the given headline numbers exactly'),
});
export type BriefingNarrative = z.infer<typeof BriefingNarrative>;
