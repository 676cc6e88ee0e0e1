import { Link } from 'wouter';
import type { QuotaAlert } from '../api.ts';
import { formatNumber, QUOTA_LABELS } from '../format.ts';

/** This month's quota alerts, one line per quota at its highest threshold reached. */
export function highestAlerts(alerts: readonly QuotaAlert[]): QuotaAlert[] {
  const byQuota = new Map<QuotaAlert['quota'], QuotaAlert>();
  for (const alert of alerts) {
    const seen = byQuota.get(alert.quota);
    if (!seen || alert.threshold_percent > seen.threshold_percent) byQuota.set(alert.quota, alert);
  }
  return (['api_calls', 'ai_calls'] as const).flatMap((quota) => byQuota.get(quota) ?? []);
}

export function alertSentence(alert: QuotaAlert): string {
  return `${QUOTA_LABELS[alert.quota]} have reached ${alert.threshold_percent}% of this month's quota (${formatNumber(alert.used)} of ${formatNumber(alert.limit)}).`;
}

export function QuotaBanner({ alerts }: { alerts: readonly QuotaAlert[] }) {
  const shown = highestAlerts(alerts);
  if (shown.length === 0) return null;
  const severe = shown.some((a) => a.threshold_percent >= 95);
  return (
    <div className={`banner ${severe ? 'banner-danger' : 'banner-warning'}`} role="status">
      <ul className="banner-list">
        {shown.map((alert) => (
          <li key={alert.quota}>{alertSentence(alert)}</li>
        ))}
      </ul>
      <Link href="/usage" className="banner-link">
        View usage
      </Link>
    </div>
  );
}
