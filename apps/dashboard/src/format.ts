const numberFormat = new Intl.NumberFormat();
const percentFormat = new Intl.NumberFormat(undefined, { style: 'percent', maximumFractionDigits: 0 });
const dateTimeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const preciseFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
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

/** An ISO time in `format`, `empty` for none, the text as it is when it is no time. */
const formatWith =
  (format: Intl.DateTimeFormat) =>
  (iso: string | null | undefined, empty = '—'): string => {
    if (!iso) return empty;
    const d = toDate(iso);
    return d ? format.format(d) : iso;
  };

export const formatDateTime = formatWith(dateTimeFormat);

/** An ISO 8601 date-time with its offset, as the server writes times into free text (audit details). */
const ISO_IN_TEXT = /\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})/g;

/**
 * Free text from the server with each time in it shown like every other time on the page (the audit
 * log's "valid until 2026-11-30T15:05:38.485Z" reads "valid until Nov 30, 2026, 3:05 PM"); the CLI
 * prints the same text with the ISO times as they are.
 */
export function formatDetails(text: string): string {
  return text.replace(ISO_IN_TEXT, (iso) => formatDateTime(iso));
}

/** To the second: for a webhook's attempts and retries, which come seconds apart. */
export const formatPreciseDateTime = formatWith(preciseFormat);

export const formatDate = formatWith(dateFormat);

/** 'YYYY-MM-DD' → "Nov 23" (short) or "Nov 23, 2026" (long). */
export function formatDay(day: string, style: 'short' | 'long' = 'short'): string {
  const d = toDate(`${day}T00:00:00Z`);
  if (!d) return day;
  return style === 'short' ? dayFormat.format(d) : longDayFormat.format(d);
}

/**
 * The UTC day of an instant at UTC midnight, as the server's periods and resets are ("Dec 1, 2026" in any
 * time zone; a browser west of UTC would show Nov 30 for it in local time).
 */
export function formatUtcDay(iso: string): string {
  return formatDay(iso.slice(0, 10), 'long');
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

const pad2 = (n: number) => String(n).padStart(2, '0');

/**
 * The value of an `<input type="datetime-local">` ("2026-11-30T14:00", the browser's local time) as
 * ISO 8601 with the browser's offset ("2026-11-30T14:00:00+05:30"); undefined when it is no date.
 */
export function localDateTimeToIso(value: string): string | undefined {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(value)) return undefined;
  // A date-time without an offset is local time (ECMAScript's Date parsing).
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return undefined;
  const offset = -d.getTimezoneOffset();
  const abs = Math.abs(offset);
  const date = `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())}`;
  const time = `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
  return `${date}T${time}${offset < 0 ? '-' : '+'}${pad2(Math.floor(abs / 60))}:${pad2(abs % 60)}`;
}

/** The browser's time zone ("Europe/Berlin"), to say what a datetime-local input means. */
export function localTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}
