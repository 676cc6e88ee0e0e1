import { useMutation } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { errorMessage } from '../api.ts';
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
  const mutation = useMutation({ mutationFn: onConfirm, gcTime: 0 });
  return (
    <Modal title={title} onClose={onClose} busy={mutation.isPending}>
      {(close) => (
        <form
          onSubmit={(event) => {
            event.preventDefault();
            mutation.mutate(undefined, {
              onSuccess: () => {
                onConfirmed?.();
                close();
              },
            });
          }}
        >
          <div className="modal-body">{children}</div>
          <FormError error={mutation.isError ? errorMessage(mutation.error) : null} />
          <ModalActions onCancel={close} pending={mutation.isPending} label={confirmLabel} danger />
        </form>
      )}
    </Modal>
  );
}
