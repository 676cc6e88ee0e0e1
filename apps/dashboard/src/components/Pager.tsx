import { formatNumber } from '../format.ts';

/** Previous/Next over an offset-paged list (`meta: { total, limit, offset }`). */
export function Pager({
  offset,
  limit,
  total,
  shown,
  onChange,
  busy,
}: {
  offset: number;
  limit: number;
  total: number;
  shown: number;
  onChange: (offset: number) => void;
  busy?: boolean;
}) {
  const first = total === 0 ? 0 : offset + 1;
  const last = offset + shown;
  return (
    <nav className="pager" aria-label="Pages">
      <p className="muted" aria-live="polite">
        {formatNumber(first)}–{formatNumber(last)} of {formatNumber(total)}
      </p>
      <div className="pager-buttons">
        <button
          type="button"
          className="btn btn-small"
          disabled={busy || offset === 0}
          onClick={() => onChange(Math.max(0, offset - limit))}
        >
          Previous
        </button>
        <button
          type="button"
          className="btn btn-small"
          disabled={busy || last >= total}
          onClick={() => onChange(offset + limit)}
        >
          Next
        </button>
      </div>
    </nav>
  );
}
