import type { EntityManager, Quota } from '@crm/db';
import { sql } from 'kysely';
import type { OrgScope } from '../../context.ts';
import { quotaFigures } from '../../limits/limit-check.ts';
import { ALERT_THRESHOLDS, type QuotaStatus } from '../../limits/limits.ts';
import { orgDb, orgQuery } from '../../org-scope.ts';
import { isoOf } from '../../read-model.ts';
import { CUSTOM_LIMITS, CUSTOM_OBJECTS } from '../custom-fields/custom-field.schemas.ts';
import { MAX_PIPELINES, MAX_STAGES } from '../pipeline/pipeline.schemas.ts';
import { MAX_VIEWS_PER_ORG } from '../views/views.service.ts';
import { MAX_WEBHOOKS_PER_ORG } from '../webhooks/webhooks.service.ts';
import type { UsageLimits, UsageResponse } from './usage.schemas.ts';

/** The alerts recorded in a period, oldest first. */
const periodAlerts = orgQuery((db, a: { period: string }) =>
  db
    .selectFrom('usage_alerts')
    .select(['quota', 'threshold_percent', 'used', 'quota_limit', isoOf('created_at').as('recorded_at')])
    .where('period', '=', a.period)
    .orderBy('created_at')
    .orderBy('quota')
    .orderBy('threshold_percent'),
);

function quotaUsage(status: QuotaStatus, resetAt: string): UsageResponse['quotas']['api_calls'] {
  const percent = status.limit === 0 ? 100 : Math.round((status.used / status.limit) * 10_000) / 100;
  return { ...quotaFigures(status, { resetAt }), percent_used: percent };
}

/** The organization's usage this month: live counts, its limits, the rate-limit groups and the alerts. */
export async function usageOf(ctx: OrgScope): Promise<UsageResponse> {
  const snapshot = await ctx.services.limits.usage(ctx.principal.orgId);
  const { period } = snapshot;
  const alerts = await periodAlerts(ctx.em, { period: period.key });
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
      quota: a.quota as Quota,
      threshold_percent: Number(a.threshold_percent),
      used: Number(a.used),
      limit: Number(a.quota_limit),
      recorded_at: a.recorded_at,
    })),
  };
}

/** What the dashboard's banner says of one quota now: a threshold reached, or the quota used up. */
export interface QuotaNotice {
  quota: Quota;
  used: number;
  limit: number;
  reset_at: string;
  /** The highest alert threshold reached (80, 95), or 100 when the calls are refused. */
  reached: number;
}

/**
 * The quotas that need an admin's eye now, from this moment's use and limits (not from the month's
 * recorded alerts, which stay recorded after a quota is raised): at or past an alert threshold, or used
 * up, when the calls are being refused.
 */
export function quotaNotices(quotas: UsageResponse['quotas']): QuotaNotice[] {
  return (['api_calls', 'ai_calls'] as const).flatMap((quota) => {
    const q = quotas[quota];
    const reached = q.used >= q.limit ? 100 : ALERT_THRESHOLDS.findLast((t) => q.used * 100 >= t * q.limit);
    return reached === undefined
      ? []
      : [{ quota, used: q.used, limit: q.limit, reset_at: q.reset_at, reached }];
  });
}

/**
 * How much of each limit on what an organization keeps is used (GET /usage/limits): custom fields per
 * object (and indexed ones), options per select, pipelines, stages per pipeline, webhook endpoints. Four small reads of
 * definitions, never of records: the values' bytes per record are checked on each write and not shown.
 */
export async function usageLimits(em: EntityManager): Promise<UsageLimits> {
  const db = orgDb(em);
  const [fields, pipelines, stages, webhooks, views] = await Promise.all([
    db
      .selectFrom('custom_fields')
      .select([
        'object',
        'key',
        'is_indexed',
        'archived_at',
        sql<number>`jsonb_array_length(options)`.as('options'),
      ])
      .execute(),
    db
      .selectFrom('pipelines')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirst(),
    db
      .selectFrom('pipeline_stages')
      .select((eb) => ['pipeline_id', eb.fn.countAll<string>().as('n')])
      .groupBy('pipeline_id')
      .orderBy('n', 'desc')
      .orderBy('pipeline_id')
      .limit(1)
      .executeTakeFirst(),
    db
      .selectFrom('webhook_endpoints')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirst(),
    db
      .selectFrom('saved_views')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirst(),
  ]);
  const custom = Object.fromEntries(
    CUSTOM_OBJECTS.map((object) => {
      const own = fields.filter((f) => f.object === object);
      const largest = own.reduce<(typeof own)[number] | undefined>(
        (top, f) => (Number(f.options) > Number(top?.options ?? 0) ? f : top),
        undefined,
      );
      return [
        object,
        {
          fields: { used: own.length, limit: CUSTOM_LIMITS.fieldsPerObject },
          indexed_fields: {
            used: own.filter((f) => f.is_indexed && !f.archived_at).length,
            limit: CUSTOM_LIMITS.indexedPerObject,
          },
          options_per_select: {
            used: Number(largest?.options ?? 0),
            limit: CUSTOM_LIMITS.optionsPerSelect,
            key: largest?.key ?? null,
          },
          value_bytes_per_record: { limit: CUSTOM_LIMITS.valueBytesPerRecord },
        },
      ];
    }),
  ) as UsageLimits['custom_fields'];
  return {
    custom_fields: custom,
    pipelines: { used: Number(pipelines?.n ?? 0), limit: MAX_PIPELINES },
    stages_per_pipeline: {
      used: Number(stages?.n ?? 0),
      limit: MAX_STAGES,
      pipeline_id: stages?.pipeline_id ?? null,
    },
    webhook_endpoints: { used: Number(webhooks?.n ?? 0), limit: MAX_WEBHOOKS_PER_ORG },
    saved_views: { used: Number(views?.n ?? 0), limit: MAX_VIEWS_PER_ORG },
  };
}
