import type { ReactNode } from 'react';
import { SecretField } from './SecretField.tsx';

type Props = {
  /** The accessible name of the secret's field ("API key", "Signing secret", "Invitation link"). */
  label: string;
  secret: string;
  /** What else to know about it, between the secret and the warning. */
  details?: ReactNode;
  /** That it will not be shown again (and for how long it is valid, where it expires). */
  warning: ReactNode;
  onDone: () => void;
  /** What the secret is for and how to use it. */
  children: ReactNode;
};

/**
 * A dialog's content once it has made a secret: what it is, the secret to copy, the warning, then Done. The
 * secret lives only in the state of the dialog that got it (never in the query cache): Done closes the
 * dialog, which unmounts it.
 */
export function ShownOnce({ label, secret, details, warning, onDone, children }: Props) {
  return (
    <div>
      <div className="modal-body">
        {children}
        <SecretField label={label} value={secret} />
        {details}
        <p className="warning-text">{warning}</p>
      </div>
      <div className="modal-actions">
        <button type="button" className="btn btn-primary" onClick={onDone}>
          Done
        </button>
      </div>
    </div>
  );
}
