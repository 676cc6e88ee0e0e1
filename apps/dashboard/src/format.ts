const numberFormat = new Intl.NumberFormat();
const percentFormat = new Intl.NumberFormat(undefined, { style: 'percent', maximumFractionDigits: 0 });
const dateTimeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium' });
// Calendar days (YYYY-MM-DD) are UTC days on the server: format them in UTC so they do not shift by one.
const dayFormat = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });
const longDayFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeZone: 'UTC' });

export function formatNumber(n: number): string {
  return numberFormat.format(n);
}

/** `percent` is 0..100 (as the server sends it), not 0..1. */
export function formatPercent(percent: number): string {
  return percentFormat.format(percent / 100);
}

function toDate(iso: string): Date | null {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? null : d;
}

export function formatDateTime(iso: string | null | undefined, empty = '—'): string {
  if (!iso) return empty;
  const d = toDate(iso);
  return d ? dateTimeFormat.format(d) : iso;
}

export function formatDate(iso: string | null | undefined, empty = '—'): string {
  if (!iso) return empty;
  const d = toDate(iso);
  return d ? dateFormat.format(d) : iso;
}

/** 'YYYY-MM-DD' → "Nov 23" (short) or "Nov 23, 2026" (long). */
export function formatDay(day: string, style: 'short' | 'long' = 'short'): string {
  const d = toDate(`${day}T00:00:00Z`);
  if (!d) return day;
  return style === 'short' ? dayFormat.format(d) : longDayFormat.format(d);
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${formatNumber(Math.round(ms))} ms`;
  return `${new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 }).format(ms / 1000)} s`;
}

export function formatWindow(seconds: number): string {
  if (seconds === 1) return 'second';
  if (seconds === 60) return 'minute';
  if (seconds === 3600) return 'hour';
  if (seconds === 86400) return 'day';
  if (seconds % 3600 === 0) return `${formatNumber(seconds / 3600)} hours`;
  if (seconds % 60 === 0) return `${formatNumber(seconds / 60)} minutes`;
  return `${formatNumber(seconds)} seconds`;
}

export const QUOTA_LABELS = { api_calls: 'API calls', ai_calls: 'AI calls' } as const;
