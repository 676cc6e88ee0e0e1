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
