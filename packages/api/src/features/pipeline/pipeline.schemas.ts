import { z } from 'zod';
import { Uuid } from '../../schemas.ts';

export const PipelineStage = z
  .object({
    id: Uuid,
    name: z.string(),
    stage_type: z.string().nullable(),
    position: z.number().int(),
    color: z.string(),
    is_closed: z.boolean(),
    probability: z.number().nullable(),
  })
  .meta({ id: 'PipelineStage' });

export const PipelineHealth = z
  .object({
    total_deals: z.number().int().describe('Open deals (stage_type open)'),
    healthy_deals: z
      .number()
      .int()
      .describe('Open deals with activity within the threshold and not past their close date'),
    healthy_percentage: z.number().int().min(0).max(100),
    stale_deals: z.number().int().describe('Open deals with no activity for more than stale_threshold_days'),
    pending_actions: z.number().int().describe('Open deals that need a next step soon but are not critical'),
    critical_actions: z
      .number()
      .int()
      .describe('Open deals past their close date or idle for twice the threshold'),
    stale_threshold_days: z.number().int(),
  })
  .meta({ id: 'PipelineHealth' });
export type PipelineHealthDto = z.infer<typeof PipelineHealth>;
