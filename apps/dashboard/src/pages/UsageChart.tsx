import { BarController, BarElement, CategoryScale, Chart, Legend, LinearScale, Tooltip } from 'chart.js';
import { useEffect, useRef } from 'react';
import type { DailyUsage } from '../api.ts';
import { formatDay, formatNumber } from '../format.ts';

// Only what a bar chart needs, so the rest of Chart.js is left out of the bundle.
Chart.register(BarController, BarElement, CategoryScale, LinearScale, Tooltip, Legend);
Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;

const API_COLOR = '#4f46e5';
const AI_COLOR = '#0f766e';

/** A sentence a screen reader reads for the canvas; the same figures are in the table beside it. */
export function chartSummary(daily: readonly DailyUsage[]): string {
  if (daily.length === 0) return 'Calls per day: no data yet.';
  const api = daily.reduce((sum, d) => sum + d.api_calls, 0);
  const ai = daily.reduce((sum, d) => sum + d.ai_calls, 0);
  let busiest = daily[0] as DailyUsage;
  for (const d of daily) if (d.api_calls + d.ai_calls > busiest.api_calls + busiest.ai_calls) busiest = d;
  const first = daily[0] as DailyUsage;
  const last = daily[daily.length - 1] as DailyUsage;
  return (
    `Bar chart of calls per day from ${formatDay(first.day, 'long')} to ${formatDay(last.day, 'long')}: ` +
    `${formatNumber(api)} API calls and ${formatNumber(ai)} AI calls in total. ` +
    `Busiest day: ${formatDay(busiest.day, 'long')}, with ${formatNumber(busiest.api_calls)} API calls and ` +
    `${formatNumber(busiest.ai_calls)} AI calls.`
  );
}

export function UsageChart({ daily }: { daily: readonly DailyUsage[] }) {
  const canvas = useRef<HTMLCanvasElement>(null);

  useEffect(() => {
    if (!canvas.current) return;
    const chart = new Chart(canvas.current, {
      type: 'bar',
      data: {
        labels: daily.map((d) => formatDay(d.day)),
        datasets: [
          {
            label: 'API calls',
            data: daily.map((d) => d.api_calls),
            backgroundColor: API_COLOR,
            borderRadius: 2,
          },
          {
            label: 'AI calls',
            data: daily.map((d) => d.ai_calls),
            backgroundColor: AI_COLOR,
            borderRadius: 2,
          },
        ],
      },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        // A calm page: no grow-in animation (and none to disturb people who prefer reduced motion).
        animation: false,
        interaction: { mode: 'index', intersect: false },
        plugins: {
          legend: { position: 'bottom', labels: { color: '#374151', boxWidth: 12 } },
          tooltip: {
            callbacks: {
              label: (item) => `${item.dataset.label ?? ''}: ${formatNumber(item.parsed.y ?? 0)}`,
            },
          },
        },
        scales: {
          x: { grid: { display: false }, ticks: { color: '#4b5563', maxRotation: 0, autoSkipPadding: 12 } },
          y: {
            beginAtZero: true,
            grid: { color: '#eef0f3' },
            ticks: { color: '#4b5563', precision: 0, callback: (value) => formatNumber(Number(value)) },
          },
        },
      },
    });
    return () => chart.destroy();
  }, [daily]);

  return (
    <div className="chart-box">
      <canvas ref={canvas} role="img" aria-label={chartSummary(daily)} />
    </div>
  );
}
