import { z } from 'zod';

export const DealReference = z.object({
  id: z.uuid(),
  title: z.string(),
  company_name: z.string().nullable(),
});

/** The contract's analysis result (section 2.9). */
export const AnalysisResult = z.object({
  deal: DealReference,
  win_probability: z.number().int().min(0).max(100).nullable(),
  total_score: z
    .number()
    .nullable()
    .describe('0..100: MEDDPICC pillar points as a share of the maximum, less an inactivity penalty'),
  score_band: z
    .string()
    .nullable()
    .describe('strong (>= 75), on_track (>= 55), needs_attention (>= 35), at_risk'),
  breakdown: z.record(z.string(), z.unknown()).nullable(),
  summary: z.string().nullable(),
  recommended_actions: z.array(z.string()),
  risk_factors: z.array(z.string()),
  win_factors: z.array(z.string()),
  pillar_analyses: z.array(z.record(z.string(), z.unknown())),
  stage_readiness: z.record(z.string(), z.unknown()).nullable(),
});
export type AnalysisResult = z.infer<typeof AnalysisResult>;

/** What the language model writes: the wording only, from the computed facts. */
export const AnalysisNarrative = z.object({
  summary: z
    .string()
    .min(20)
    .max(1_200)
    .describe('Two or three sentences for a sales rep: where the deal stands and why, from the facts only'),
  recommended_actions: z
    .array(z.string().min(5).max(400))
    .max(10)
    .describe('Each given action reworded as a concrete next step, same count and order, numbers kept'),
});
export type AnalysisNarrative = z.infer<typeof AnalysisNarrative>;
