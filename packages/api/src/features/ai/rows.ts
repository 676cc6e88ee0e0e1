/** Drivers hand back timestamps as Date (pg) or string (json_agg, PGlite): one place turns both into Date. */
export const asDate = (v: unknown): Date => (v instanceof Date ? v : new Date(String(v)));
export const asDateOrNull = (v: unknown): Date | null => (v == null ? null : asDate(v));
