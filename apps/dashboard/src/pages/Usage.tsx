import { useQuery } from '@tanstack/react-query';
import { queries, type UsageSummary } from '../api.ts';
import { Section } from '../components/Section.tsx';
import { ErrorState, Loading, PageHeader } from '../components/States.tsx';
import { Table } from '../components/Table.tsx';
import {
  formatDateTime,
  formatDay,
  formatNumber,
  formatPercent,
  formatUtcDay,
  formatWindow,
  QUOTA_LABELS,
} from '../format.ts';
import { usePageTitle } from '../hooks.ts';
import { UsageChart } from './UsageChart.tsx';

type Quotas = UsageSummary['usage']['quotas'];
type Alert = UsageSummary['usage']['alerts'][number];

/** The last day of a period (a UTC calendar month), from its exclusive end: the next period's start. */
const lastDayBefore = (iso: string) => formatUtcDay(new Date(Date.parse(iso) - 86_400_000).toISOString());

function alertSentence(alert: Alert): string {
  return `${QUOTA_LABELS[alert.quota]} reached ${alert.threshold_percent}% of this month's quota (${formatNumber(alert.used)} of ${formatNumber(alert.limit)}).`;
}

function QuotaCard({ quota, info }: { quota: keyof Quotas; info: Quotas[keyof Quotas] }) {
  const label = QUOTA_LABELS[quota];
  const headingId = `quota-${quota}`;
  const percent = Math.max(0, info.percent_used);
  const level = percent >= 95 ? 'danger' : percent >= 80 ? 'warning' : 'ok';
  return (
    <Section id={headingId} title={label} card className="quota-card">
      <p className="quota-figure">
        <span className="quota-used">{formatNumber(info.used)}</span> of {formatNumber(info.limit)} {label}
      </p>
      <progress
        className={`quota-bar quota-${level}`}
        max={Math.max(info.limit, 1)}
        value={Math.min(info.used, Math.max(info.limit, 1))}
        aria-labelledby={headingId}
        aria-valuetext={`${formatPercent(percent)} used`}
      />
      <p className="quota-meta">
        <span>{formatPercent(percent)} used</span>
        <span>
          {formatNumber(info.remaining)} left · resets on {formatUtcDay(info.reset_at)}
        </span>
      </p>
    </Section>
  );
}

function CallsPerDay({ daily }: { daily: UsageSummary['daily'] }) {
  return (
    <Section id="calls-per-day" title="Calls per day" card>
      <p className="muted">The last 30 days.</p>
      <UsageChart daily={daily} />
      <details className="table-details">
        <summary>Show as table</summary>
        <Table
          caption="Calls per day"
          columns={['Day', { label: 'API calls', num: true }, { label: 'AI calls', num: true }]}
          compact
          cards={false}
        >
          <tbody>
            {daily.map((d) => (
              <tr key={d.day}>
                <th scope="row">{formatDay(d.day, 'long')}</th>
                <td className="num">{formatNumber(d.api_calls)}</td>
                <td className="num">{formatNumber(d.ai_calls)}</td>
              </tr>
            ))}
          </tbody>
        </Table>
      </details>
    </Section>
  );
}

export default function UsagePage() {
  usePageTitle('Usage');
  const summary = useQuery({ ...queries.usage(), refetchInterval: 60_000 });

  if (summary.isPending)
    return (
      <>
        <PageHeader title="Usage" />
        <Loading />
      </>
    );
  if (summary.isError)
    return (
      <>
        <PageHeader title="Usage" />
        <ErrorState error={summary.error} onRetry={() => summary.refetch()} />
      </>
    );

  const { usage, daily } = summary.data;
  const alerts = [...usage.alerts].sort((a, b) => b.recorded_at.localeCompare(a.recorded_at));
  return (
    <>
      <PageHeader
        title="Usage"
        description={`This billing period: ${formatUtcDay(usage.period.start)} to ${lastDayBefore(usage.period.end)} (calendar months in UTC).`}
      />
      <div className="quota-grid">
        <QuotaCard quota="api_calls" info={usage.quotas.api_calls} />
        <QuotaCard quota="ai_calls" info={usage.quotas.ai_calls} />
      </div>
      <CallsPerDay daily={daily} />
      <div className="two-columns">
        <Section id="rate-limits" title="Rate limits" card>
          {usage.rate_limits.length === 0 ? (
            <p className="muted">No rate limits apply.</p>
          ) : (
            <Table
              caption="Rate limits"
              columns={['Group', { label: 'Limit', num: true }]}
              compact
              cards={false}
            >
              <tbody>
                {usage.rate_limits.map((r) => (
                  <tr key={r.group}>
                    <th scope="row">
                      <code>{r.group}</code>
                    </th>
                    <td className="num">
                      {formatNumber(r.limit)} per {formatWindow(r.window_seconds)}
                    </td>
                  </tr>
                ))}
              </tbody>
            </Table>
          )}
        </Section>
        <Section id="alerts" title="Alerts this month" card>
          {usage.alerts.length === 0 ? (
            <p className="muted">No alerts this month.</p>
          ) : (
            <ul className="alert-list">
              {alerts.map((a) => (
                <li key={`${a.quota}-${a.threshold_percent}`}>
                  <span className={`badge ${a.threshold_percent >= 95 ? 'badge-danger' : 'badge-warning'}`}>
                    {a.threshold_percent}%
                  </span>{' '}
                  {alertSentence(a)} <span className="muted">Reached {formatDateTime(a.recorded_at)}.</span>
                </li>
              ))}
            </ul>
          )}
        </Section>
      </div>
    </>
  );
}
