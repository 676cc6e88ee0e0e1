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
