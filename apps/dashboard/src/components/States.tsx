import { type ReactNode, useEffect, useRef } from 'react';
import { errorMessage } from '../api.ts';
import type { Outcome } from '../hooks.ts';

export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <p className="loading" role="status">
      {label}
    </p>
  );
}

export function ErrorState({ error, onRetry }: { error: unknown; onRetry: () => void }) {
  return (
    <div className="error-state" role="alert">
      <p>{errorMessage(error)}</p>
      <button type="button" className="btn" onClick={onRetry}>
        Try again
      </button>
    </div>
  );
}

export function EmptyState({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="empty-state">
      <p className="empty-title">{title}</p>
      {children && <div className="empty-body">{children}</div>}
    </div>
  );
}

/** The outcome of the last action on a page: a success note, or the server's message when it failed. */
export function Notice({ outcome: { notice, dismiss } }: { outcome: Outcome }) {
  const ref = useRef<HTMLDivElement>(null);
  // Focus goes to the outcome: a confirmed Revoke or Remove takes away the button its dialog handed
  // focus back to, and a keyboard user was left at the top of the page with nothing focused.
  useEffect(() => {
    if (notice) ref.current?.focus();
  }, [notice]);
  if (!notice) return <div className="notice-slot" role="status" />;
  return (
    <div
      ref={ref}
      tabIndex={-1}
      className={`notice notice-${notice.kind}`}
      role={notice.kind === 'error' ? 'alert' : 'status'}
    >
      <p>{notice.text}</p>
      <button type="button" className="btn btn-small btn-ghost" onClick={dismiss}>
        Dismiss
      </button>
    </div>
  );
}

export function PageHeader({
  title,
  description,
  actions,
}: {
  title: string;
  description?: ReactNode;
  actions?: ReactNode;
}) {
  return (
    <div className="page-header">
      <div>
        <h1>{title}</h1>
        {description && <p className="page-description">{description}</p>}
      </div>
      {actions && <div className="page-actions">{actions}</div>}
    </div>
  );
}
