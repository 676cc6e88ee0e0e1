import type { Scope } from '@crm/api';
import { useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { api, queries } from '../../api.ts';
import { InputField } from '../../components/Field.tsx';
import { FormError } from '../../components/FormError.tsx';
import { Modal, ModalActions } from '../../components/Modal.tsx';
import { localDateTimeToIso, localTimeZone } from '../../format.ts';
import { useCheckedSet, useRequest } from '../../hooks.ts';
import { type Access, AccessFieldset } from './AccessFieldset.tsx';
import { type IssuedKey, ShownOnceKey } from './ShownOnceKey.tsx';
import { FULL_ACCESS, SCOPES } from './scopes.ts';

/** Asks a name, what the key may do and until when, creates it, then shows it once. */
export function CreateKeyDialog({ onClose }: { onClose: () => void }) {
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [access, setAccess] = useState<Access>('full');
  const [scopes, toggle] = useCheckedSet<Scope>();
  const [expires, setExpires] = useState('');
  const { pending, error, setError, run } = useRequest();
  const [created, setCreated] = useState<(IssuedKey & { name: string }) | null>(null);

  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (access === 'scoped' && scopes.size === 0)
      return setError('Choose at least one scope, or give the key full access.');
    let expiresAt: string | null = null;
    if (expires) {
      const iso = localDateTimeToIso(expires);
      if (!iso) return setError('Enter the expiry as a date and time, or leave it empty.');
      if (Date.parse(iso) <= Date.now())
        return setError('The expiry must be in the future. Leave it empty for a key that does not expire.');
      expiresAt = iso;
    }
    void run(
      () =>
        api.keys.create.mutate({
          name: name.trim(),
          scopes: access === 'full' ? [FULL_ACCESS] : SCOPES.filter((s) => scopes.has(s)),
          expires_at: expiresAt,
        }),
      (result) => {
        setCreated({
          apiKey: result.api_key,
          name: result.name,
          scopes: result.scopes,
          expiresAt: result.expires_at,
        });
        void queryClient.invalidateQueries({ queryKey: queries.keys().queryKey });
      },
    );
  }

  return (
    <Modal
      title={created ? 'Your new API key' : 'Create API key'}
      onClose={onClose}
      busy={pending}
      wide={!created && access === 'scoped'}
    >
      {(close) =>
        created ? (
          <ShownOnceKey issued={created} onDone={close}>
            <p>
              The key <strong>{created.name}</strong> is ready. Send it in the <code>Authorization</code>{' '}
              header as <code>Bearer &lt;key&gt;</code>.
            </p>
          </ShownOnceKey>
        ) : (
          <form onSubmit={onSubmit}>
            <div className="modal-body">
              <InputField
                id="key-name"
                label="Name"
                hint='Say where it is used, e.g. "Website backend".'
                required
                maxLength={100}
                autoComplete="off"
                value={name}
                onChange={(e) => setName(e.target.value)}
              />
              <AccessFieldset access={access} onAccess={setAccess} scopes={scopes} onToggle={toggle} />
              <InputField
                id="key-expires"
                label="Expires (optional)"
                hint={
                  <>In your time zone ({localTimeZone()}). Leave it empty for a key that does not expire.</>
                }
                spaced
                className="input-datetime"
                type="datetime-local"
                value={expires}
                onChange={(e) => setExpires(e.target.value)}
              />
              <FormError error={error} />
            </div>
            <ModalActions
              onCancel={close}
              pending={pending}
              label="Create"
              pendingLabel="Creating…"
              disabled={name.trim() === ''}
            />
          </form>
        )
      }
    </Modal>
  );
}
