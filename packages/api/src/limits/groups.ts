import type { LimitsConfig } from '@crm/config';

/**
 * The contract's per-minute rate-limit groups (section 8). A procedure names its group in its meta;
 * one without a group falls in the default group. The AI group also consumes the monthly AI quota.
 */
export const RATE_LIMIT_GROUPS = ['crud', 'ai', 'search', 'webhooks', 'events'] as const;
export type RateLimitGroup = (typeof RATE_LIMIT_GROUPS)[number];

/** Every operation counts in exactly one group: its own, or `default`. */
export type LimitGroup = RateLimitGroup | 'default';
export const LIMIT_GROUPS = [...RATE_LIMIT_GROUPS, 'default'] as const;

export interface GroupLimit {
  group: LimitGroup;
  /** Requests per window and API key. */
  limit: number;
  windowSeconds: number;
}

export function groupLimits(config: LimitsConfig): Record<LimitGroup, GroupLimit> {
  const entries = LIMIT_GROUPS.map(
    (group) =>
      [group, { group, limit: config.perWindow[group], windowSeconds: config.windowSeconds }] as const,
  );
  return Object.fromEntries(entries) as Record<LimitGroup, GroupLimit>;
}
