import type { Quota } from '@crm/db';
import type { OrgScope } from '../../context.ts';
import type { QuotaStatus } from '../../limits/limits.ts';
import { isoSql, orgRows } from '../../read-model.ts';
import type { UsageResponse } from './usage.schemas.ts';

type AlertRow = {
  quota: Quota;
  threshold_percent: number;
  used: unknown;
  quota_limit: unknown;
  recorded_at: string;
};

function quotaUsage(status: QuotaStatus, resetAt: string): UsageResponse['quotas']['api_calls'] {
  const percent = status.limit === 0 ? 100 : Math.round((status.used / status.limit) * 10_000) / 100;
  return {
    limit: status.limit,
    used: status.used,
    remaining: Math.max(0, status.limit - status.used),
    percent_used: percent,
    reset_at: resetAt,
  };
}

/** The organization's usage this month: live counts, its limits, the rate-limit groups and the alerts. */
export async function usageOf(ctx: OrgScope): Promise<UsageResponse> {
  const snapshot = await ctx.services.limits.usage(ctx.principal.orgId);
  const { period } = snapshot;
  const alerts = await orgRows<AlertRow>(
    ctx.em,
    `select quota, threshold_percent, used, quota_limit, ${isoSql('created_at')} as recorded_at
       from usage_alerts where org_id = ? and period = ? order by created_at, quota, threshold_percent`,
    [period.key],
  );
  return {
    period: { start: period.start.toISOString(), end: period.end.toISOString() },
    quotas: {
      api_calls: quotaUsage(snapshot.quotas.api_calls, period.resetAt),
      ai_calls: quotaUsage(snapshot.quotas.ai_calls, period.resetAt),
    },
    rate_limits: snapshot.rateLimits.map((g) => ({
      group: g.group,
      limit: g.limit,
      window_seconds: g.windowSeconds,
    })),
    alerts: alerts.map((a) => ({
      quota: a.quota,
      threshold_percent: Number(a.threshold_percent),
      used: Number(a.used),
      limit: Number(a.quota_limit),
      recorded_at: a.recorded_at,
    })),
  };
}
