import { Link } from 'wouter';
import type { QuotaNotice } from '../api.ts';
import { formatNumber, formatUtcDay, QUOTA_LABELS } from '../format.ts';

/** One quota's line: the threshold it reached, or that its calls are refused and until when. */
export function noticeSentence(notice: QuotaNotice): string {
  const label = QUOTA_LABELS[notice.quota];
  const figures = `${formatNumber(notice.used)} of ${formatNumber(notice.limit)}`;
  if (notice.reached < 100)
    return `${label} have reached ${notice.reached}% of this month's quota (${figures}).`;
  if (notice.limit === 0) return `${label} are switched off for this organization (its quota is 0).`;
  // reset_at is the start of next month (UTC midnight): the day the calls are admitted again.
  return `${label}: this month's quota is used up (${figures}); they are refused until ${formatUtcDay(notice.reset_at)}.`;
}

/** The quotas that need attention now (from the server: current use against current limits). */
export function QuotaBanner({ notices }: { notices: readonly QuotaNotice[] }) {
  if (notices.length === 0) return null;
  const severe = notices.some((n) => n.reached >= 95);
  return (
    <div className={`banner ${severe ? 'banner-danger' : 'banner-warning'}`} role="status">
      <ul className="banner-list">
        {notices.map((notice) => (
          <li key={notice.quota}>{noticeSentence(notice)}</li>
        ))}
      </ul>
      <Link href="/usage" className="banner-link">
        View usage
      </Link>
    </div>
  );
}
