import { z } from 'zod';

/** The contract's coaching result (section 2.12). */
export const CoachingResult = z.object({
  period: z.string(),
  win_rate: z
    .string()
    .describe('Won share of the deals closed in the period, e.g. "58%"; "n/a" when none closed'),
  deals_won: z.number().int(),
  deals_lost: z.number().int(),
  avg_cycle_days: z.number().int().nullable(),
  coaching_tips: z.array(z.string()),
});
export type CoachingResult = z.infer<typeof CoachingResult>;

export const CoachingNarrative = z.object({
  coaching_tips: z
    .array(z.string().min(10).max(600))
    .max(12)
    .describe('Each given tip reworded as advice to the team, same count and order, every number kept'),
});
export type CoachingNarrative = z.infer<typeof CoachingNarrative>;
