import type { ReactNode } from 'react';
import { useRequest } from '../hooks.ts';
import { FormError } from './FormError.tsx';
import { Modal, ModalActions } from './Modal.tsx';

type Props = {
  title: string;
  children: ReactNode;
  confirmLabel: string;
  onConfirm: () => Promise<unknown>;
  onConfirmed?: () => void;
  onClose: () => void;
};

/** "Are you sure?" for a destructive action; shows the server's message if the action fails. */
export function ConfirmDialog({ title, children, confirmLabel, onConfirm, onConfirmed, onClose }: Props) {
  const { pending, error, run } = useRequest();
  return (
    <Modal title={title} onClose={onClose} busy={pending}>
      {(close) => (
        <form
          onSubmit={(event) => {
            event.preventDefault();
            void run(onConfirm, () => {
              onConfirmed?.();
              close();
            });
          }}
        >
          <div className="modal-body">{children}</div>
          <FormError error={error} />
          <ModalActions onCancel={close} pending={pending} label={confirmLabel} danger />
        </form>
      )}
    </Modal>
  );
}
