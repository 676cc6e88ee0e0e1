import { useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useId, useState } from 'react';
import { type ApiKey, api, queries } from '../../api.ts';
import { FormError } from '../../components/FormError.tsx';
import { Modal, ModalActions } from '../../components/Modal.tsx';
import { useRequest } from '../../hooks.ts';
import { DateTime, keyLabel } from './KeyFacts.tsx';
import { type IssuedKey, ShownOnceKey } from './ShownOnceKey.tsx';

/** How long a rotated key keeps working next to its successor; the server's default is 24 hours. */
const OVERLAPS = [
  { hours: 0, label: 'No overlap: stop it now' },
  { hours: 1, label: '1 hour' },
  { hours: 24, label: '24 hours (recommended)' },
  { hours: 24 * 7, label: '7 days' },
] as const;
const DEFAULT_OVERLAP_HOURS = 24;

/**
 * Asks how long the old key keeps working, rotates it, then shows the successor once (same name, scopes
 * and expiry as the old key).
 */
export function RotateKeyDialog({ apiKey, onClose }: { apiKey: ApiKey; onClose: () => void }) {
  const queryClient = useQueryClient();
  const overlapName = useId();
  const [overlapHours, setOverlapHours] = useState<number>(DEFAULT_OVERLAP_HOURS);
  const { pending, error, run } = useRequest();
  const [rotated, setRotated] = useState<(IssuedKey & { oldKeyExpiresAt: string; overlap: number }) | null>(
    null,
  );

  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    void run(
      () => api.keys.rotate.mutate({ key_id: apiKey.key_id, overlap_hours: overlapHours }),
      (result) => {
        setRotated({
          apiKey: result.api_key,
          scopes: result.scopes,
          expiresAt: result.expires_at,
          oldKeyExpiresAt: result.old_key_expires_at,
          overlap: overlapHours,
        });
        void queryClient.invalidateQueries({ queryKey: queries.keys().queryKey });
      },
    );
  }

  return (
    <Modal title={rotated ? 'Your new API key' : 'Rotate API key'} onClose={onClose} busy={pending}>
      {(close) =>
        rotated ? (
          <ShownOnceKey issued={rotated} onDone={close}>
            <p>
              <strong>{keyLabel(apiKey)}</strong> has a successor with the same name, access and expiry. Put
              it in your applications in place of the old key.
            </p>
            <p>
              {rotated.overlap === 0 ? (
                <>
                  The old key <code className="key-prefix">{apiKey.prefix}…</code> has stopped working.
                </>
              ) : (
                <>
                  The old key <code className="key-prefix">{apiKey.prefix}…</code> keeps working until{' '}
                  <strong>
                    <DateTime iso={rotated.oldKeyExpiresAt} />
                  </strong>
                  , then stops.
                </>
              )}
            </p>
          </ShownOnceKey>
        ) : (
          <form onSubmit={onSubmit}>
            <div className="modal-body">
              <p>
                Rotate <strong>{keyLabel(apiKey)}</strong>? You get a new key with the same access and expiry,
                shown once. The old key keeps working for the time you choose, so your applications can switch
                over without an outage; then it stops.
              </p>
              <fieldset className="fieldset">
                <legend>Keep the old key working for</legend>
                <div className="radio-list">
                  {OVERLAPS.map(({ hours, label }) => (
                    <label key={hours} className="checkbox">
                      <input
                        type="radio"
                        name={overlapName}
                        value={hours}
                        checked={overlapHours === hours}
                        onChange={() => setOverlapHours(hours)}
                      />
                      {label}
                    </label>
                  ))}
                </div>
              </fieldset>
              {apiKey.expires_at && (
                <p className="hint field-spaced">
                  The old key stops at its own expiry (<DateTime iso={apiKey.expires_at} />) if that comes
                  first.
                </p>
              )}
              <FormError error={error} spaced />
            </div>
            <ModalActions onCancel={close} pending={pending} label="Rotate" pendingLabel="Rotating…" />
          </form>
        )
      }
    </Modal>
  );
}
