import { formatNumber } from '../format.ts';

/** One page of an offset-paged list, as the server answers it. */
type Page = { data: readonly unknown[]; meta: { total: number; limit: number; offset: number } };

/** Previous/Next over an offset-paged list, and which of its items are shown. */
export function Pager({
  page,
  onChange,
  busy,
}: {
  page: Page;
  onChange: (offset: number) => void;
  busy?: boolean;
}) {
  const { offset, limit, total } = page.meta;
  const first = total === 0 ? 0 : offset + 1;
  const last = offset + page.data.length;
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
