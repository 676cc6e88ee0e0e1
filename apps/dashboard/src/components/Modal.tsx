import { type ReactNode, useEffect, useId, useRef } from 'react';

type Props = {
  title: string;
  /** Called once the dialog has closed (Escape, a Cancel/Done button); the parent then unmounts it. */
  onClose: () => void;
  /** While true, Escape does not close the dialog (a request is under way). */
  busy?: boolean;
  /** A wider dialog, for forms with a grid of choices. */
  wide?: boolean;
  children: (close: () => void) => ReactNode;
};

/**
 * A native modal <dialog>, opened with showModal() when mounted. Mount it to open, and let it call
 * onClose to unmount it: whatever its children kept in state (a shown-once secret) is gone with it.
 */
export function Modal({ title, onClose, busy = false, wide = false, children }: Props) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();

  useEffect(() => {
    const dialog = ref.current;
    if (dialog && !dialog.open) dialog.showModal();
  }, []);

  const close = () => ref.current?.close();

  return (
    <dialog
      ref={ref}
      className={wide ? 'modal modal-wide' : 'modal'}
      aria-labelledby={titleId}
      onClose={onClose}
      onCancel={(event) => {
        if (busy) event.preventDefault();
      }}
    >
      <h2 id={titleId} className="modal-title">
        {title}
      </h2>
      {children(close)}
    </dialog>
  );
}

type ActionsProps = {
  onCancel: () => void;
  /** A request is under way: both buttons wait, and the action shows `pendingLabel` ("Creating…"). */
  pending: boolean;
  /** The submit button of the dialog's form: what the dialog is for. */
  label: string;
  pendingLabel?: string;
  /** Red, for what cannot be undone. */
  danger?: boolean;
  /** Not yet: the form lacks something the button needs. */
  disabled?: boolean;
};

/** A dialog's footer: Cancel, then the action it asks for. */
export function ModalActions({
  onCancel,
  pending,
  label,
  pendingLabel = label,
  danger = false,
  disabled = false,
}: ActionsProps) {
  return (
    <div className="modal-actions">
      <button type="button" className="btn" onClick={onCancel} disabled={pending}>
        Cancel
      </button>
      <button
        type="submit"
        className={danger ? 'btn btn-danger' : 'btn btn-primary'}
        disabled={pending || disabled}
      >
        {pending ? pendingLabel : label}
      </button>
    </div>
  );
}
