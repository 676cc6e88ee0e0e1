import { STAGE_TYPES } from '@crm/db';
import { z } from 'zod';
import { DateTimeOut, Text, Uuid } from '../../schemas.ts';

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

/** How many stages a pipeline may have, and how many pipelines an organization. */
export const MAX_STAGES = 50;
export const MAX_PIPELINES = 100;

export const PipelineHealthQuery = z
  .strictObject({
    pipeline_id: Uuid.optional().describe(
      'Only this pipeline’s open deals; without it, every open deal of the organization, whatever its pipeline',
    ),
  })
  // Optional as a whole: `GET /pipeline/health` and a tRPC `pipeline.health.query()` take no input, as before.
  .optional();

/** A stage as the pipelines endpoints answer it: GET /pipeline/stages' fields, and more. */
export const Stage = PipelineStage.extend({
  stage_type: z.enum(STAGE_TYPES),
  pipeline_id: Uuid,
  rotten_days: z
    .number()
    .int()
    .nullable()
    .describe('Days without activity after which a deal in the stage is rotting; null: never'),
  deal_count: z.number().int().min(0).describe('Deals in the stage now'),
}).meta({ id: 'Stage' });
export type StageDto = z.infer<typeof Stage>;

export const Pipeline = z
  .object({
    id: Uuid,
    name: z.string(),
    is_default: z
      .boolean()
      .describe('The pipeline GET /pipeline/stages answers and deals go to without a pipeline_id'),
    created_at: DateTimeOut,
    stages: z.array(Stage).describe('In order of position (1, 2, … without gaps)'),
  })
  .meta({ id: 'Pipeline' });
export type PipelineDto = z.infer<typeof Pipeline>;

const Name = Text().trim().min(1, 'must not be empty').max(100);
const Color = z.string().regex(/^#[0-9a-fA-F]{6}$/, 'must be a color as #rrggbb');
const Probability = z
  .number()
  .int()
  .min(0)
  .max(100)
  .describe('Win probability of a deal in the stage, 0..100');
const RottenDays = z.number().int().min(1).max(3650);
const Position = z.number().int().min(1).describe('1 is first; the others move to make room, without gaps');

/** The fields of a stage a client sets (all but the name optional). */
const stageFields = {
  name: Name,
  stage_type: z
    .enum(STAGE_TYPES)
    .optional()
    .describe('open (the default), won or lost; a won or lost stage is closed'),
  color: Color.optional().describe('#rrggbb; a grey when left out'),
  probability: Probability.nullable()
    .optional()
    .describe('0..100; when left out 100 for a won stage, 0 for a lost one, none for an open one'),
  rotten_days: RottenDays.nullable()
    .optional()
    .describe('Days idle before a deal in it is rotting; none by default'),
};

const StageInput = z.strictObject(stageFields);
export type StageInput = z.infer<typeof StageInput>;

export const PipelineCreateInput = z
  .strictObject({
    name: Name,
    is_default: z
      .boolean()
      .optional()
      .describe('Make it the default pipeline (the one before stops being it)'),
    stages: z.array(StageInput).min(1).max(MAX_STAGES).describe('Its stages, in order'),
  })
  .meta({
    id: 'PipelineCreateRequest',
    examples: [
      {
        name: 'Partnerships',
        stages: [
          { name: 'Intro', probability: 10 },
          { name: 'Pilot', probability: 40, rotten_days: 21 },
          { name: 'Signed', stage_type: 'won' },
          { name: 'Dropped', stage_type: 'lost' },
        ],
      },
    ],
  });
export type PipelineCreateInput = z.infer<typeof PipelineCreateInput>;

const PipelineUpdateBody = {
  name: Name.optional(),
  is_default: z
    .boolean()
    .optional()
    .describe('true makes it the default pipeline; to stop being it, make another one the default'),
};
export const PipelineUpdateInput = z
  .strictObject({ id: Uuid.describe('Pipeline id'), ...PipelineUpdateBody })
  .meta({ examples: [{ name: 'Enterprise sales' }] });
export type PipelineUpdateInput = z.infer<typeof PipelineUpdateInput>;

export const StageCreateInput = z
  .strictObject({
    id: Uuid.describe('Pipeline id'),
    ...stageFields,
    position: Position.optional().describe('1 is first; at the end when left out; the others move down'),
  })
  .meta({ examples: [{ name: 'Security review', probability: 60, color: '#0ea5e9' }] });
export type StageCreateInput = z.infer<typeof StageCreateInput>;

export const StageUpdateInput = z
  .strictObject({
    id: Uuid.describe('Pipeline id'),
    stage_id: Uuid.describe('Stage id'),
    name: Name.optional(),
    stage_type: z
      .enum(STAGE_TYPES)
      .optional()
      .describe('open, won or lost: only for a stage no deal is in (move them first)'),
    color: Color.optional(),
    probability: Probability.nullable().optional(),
    rotten_days: RottenDays.nullable().optional(),
    position: Position.optional().describe(
      'Move the stage there (1 is first); the others shift, without gaps',
    ),
  })
  .meta({ examples: [{ position: 1 }] });
export type StageUpdateInput = z.infer<typeof StageUpdateInput>;

export const StageDeleteInput = z.strictObject({
  id: Uuid.describe('Pipeline id'),
  stage_id: Uuid.describe('Stage id'),
  move_to: Uuid.optional().describe(
    'Another stage of the same pipeline: the deals in the deleted stage move there (required when it has any)',
  ),
});
export type StageDeleteInput = z.infer<typeof StageDeleteInput>;

export const StageDeleteResult = z.object({
  success: z.literal(true),
  moved_deals: z.number().int().min(0).describe('Deals moved to `move_to`'),
});
