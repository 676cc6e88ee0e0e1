import { QUOTAS } from '@crm/db';
import { z } from 'zod';
import { LIMIT_GROUPS } from '../../limits/groups.ts';
import { DateTimeOut } from '../../schemas.ts';

export const QuotaUsage = z.object({
  limit: z.number().int().min(0).describe('Calls allowed in the period (0: switched off)'),
  used: z.number().int().min(0).describe('Calls counted in the period so far, this one included'),
  remaining: z.number().int().min(0),
  percent_used: z.number().min(0).describe('used ÷ limit × 100, two decimals (100 when the limit is 0)'),
  reset_at: DateTimeOut.describe('Start of the next period, when the count starts again from 0'),
});

export const UsagePeriod = z.object({
  start: DateTimeOut.describe('First instant of the current UTC calendar month'),
  end: DateTimeOut.describe('First instant of the next month (exclusive)'),
});

export const RateLimitGroupLimit = z.object({
  group: z.enum(LIMIT_GROUPS),
  limit: z.number().int().min(1).describe('Requests per window and API key'),
  window_seconds: z.number().int().min(1),
});

export const UsageAlert = z.object({
  quota: z.enum(QUOTAS),
  threshold_percent: z.number().int().describe('80 or 95'),
  used: z.number().int().min(0).describe('Calls counted when the alert was recorded'),
  limit: z.number().int().min(0),
  recorded_at: DateTimeOut,
});

export const UsageResponse = z.object({
  period: UsagePeriod,
  quotas: z.object({ api_calls: QuotaUsage, ai_calls: QuotaUsage }),
  rate_limits: z.array(RateLimitGroupLimit),
  alerts: z.array(UsageAlert).describe('Quotas that crossed 80 % or 95 % this period, oldest first'),
});
export type UsageResponse = z.infer<typeof UsageResponse>;

const LimitUse = z.object({
  used: z.number().int().min(0),
  limit: z.number().int().min(1),
});

const ObjectLimits = z.object({
  fields: LimitUse.describe(
    'Custom fields defined on the object, archived ones included (they keep their key)',
  ),
  indexed_fields: LimitUse.describe(
    'Active custom fields with `indexed: true` (an archived field’s index is dropped, so it does not count)',
  ),
  options_per_select: LimitUse.extend({
    key: z.string().nullable().describe('The select or multi_select with the most options; null when none'),
  }).describe(
    'The most options one select holds, archived ones included (a PATCH sends the whole list, at most the limit)',
  ),
  value_bytes_per_record: z
    .object({ limit: z.number().int().min(1) })
    .describe(
      'The JSON text of one record’s `custom`, checked on every write (400 over it). The largest record’s size is not shown: finding it reads every record',
    ),
});

export const UsageLimits = z
  .object({
    custom_fields: z.object({ deals: ObjectLimits, contacts: ObjectLimits, companies: ObjectLimits }),
    pipelines: LimitUse.describe('Pipelines of the organization'),
    stages_per_pipeline: LimitUse.extend({
      pipeline_id: z.string().nullable().describe('The pipeline with the most stages'),
    }).describe('The most stages one pipeline has'),
    webhook_endpoints: LimitUse.describe('Webhook endpoints, inactive ones included'),
    saved_views: LimitUse.describe('Saved views, of every object'),
  })
  .meta({ id: 'UsageLimits' });
export type UsageLimits = z.infer<typeof UsageLimits>;
