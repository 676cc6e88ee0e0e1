import type { ReactNode } from 'react';
import { ShownOnce } from '../../components/ShownOnce.tsx';
import { DateTime, ScopeList } from './KeyFacts.tsx';

export type IssuedKey = { apiKey: string; scopes: string[]; expiresAt: string | null };

/** A new key's plaintext, shown once, with what it may do and until when (a created or a rotated key). */
export function ShownOnceKey({
  issued,
  onDone,
  children,
}: {
  issued: IssuedKey;
  onDone: () => void;
  children: ReactNode;
}) {
  return (
    <ShownOnce
      label="API key"
      secret={issued.apiKey}
      details={
        <dl className="details-list key-details">
          <dt>Access</dt>
          <dd>
            <ScopeList scopes={issued.scopes} />
          </dd>
          <dt>Expires</dt>
          <dd>{issued.expiresAt ? <DateTime iso={issued.expiresAt} /> : 'Never'}</dd>
        </dl>
      }
      warning="This key will not be shown again. Copy it now and store it somewhere safe."
      onDone={onDone}
    >
      {children}
    </ShownOnce>
  );
}
