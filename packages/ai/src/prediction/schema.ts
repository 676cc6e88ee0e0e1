import { z } from 'zod';
import { DealReference } from '../analysis/schema.ts';

const Level = z.enum(['high', 'medium', 'low']);

export const PredictionFactor = z.object({
  factor: z.string(),
  impact: Level,
  description: z.string(),
});

export const PredictionRecommendation = z.object({
  action: z.string(),
  priority: Level,
  reason: z.string(),
});

/** The contract's prediction result (section 2.10). */
export const PredictionResult = z.object({
  deal: DealReference,
  win_probability: z.number().int().min(0).max(100),
  confidence: z.number().int().min(0).max(100).describe('How much data stands behind the number, 0..100'),
  risk_factors: z.array(PredictionFactor),
  positive_indicators: z.array(PredictionFactor),
  recommendations: z.array(PredictionRecommendation),
});
export type PredictionResult = z.infer<typeof PredictionResult>;

/** What the language model writes: the phrasing of the recommended actions only. */
export const PredictionNarrative = z.object({
  actions: z
    .array(z.string().min(5).max(400))
    .max(10)
    .describe('Each given recommendation action reworded as a concrete next step, same count and order'),
});
export type PredictionNarrative = z.infer<typeof PredictionNarrative>;
