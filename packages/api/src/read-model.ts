import { type EntityManager, ORG_FILTER } from '@crm/db';

/**
 * Hot read paths (lists, details, search, health) are plain SQL: hydrating entities cost more than the
 * queries themselves. Their organization comes from the same place the ORM filter reads it, the
 * request's filter parameters set at authentication; every such query takes it as its first parameter.
 */
export function currentOrg(em: EntityManager): string {
  const params = em.getFilterParams<{ orgId?: string }>(ORG_FILTER);
  if (!params?.orgId) throw new Error('no organization in this unit of work');
  return params.orgId;
}

/** Runs a read query whose first placeholder is the caller's organization. */
export function orgRows<T extends object>(
  em: EntityManager,
  sql: string,
  params: unknown[] = [],
): Promise<T[]> {
  return em.execute<T[]>(sql, [currentOrg(em), ...params] as never[]);
}

/** A timestamptz column as ISO 8601 in UTC, formatted by the database so both drivers agree. */
export const isoSql = (column: string) =>
  `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

export const numberOrNull = (v: unknown): number | null => (v == null ? null : Number(v));
