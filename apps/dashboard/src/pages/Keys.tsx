import { useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, type ReactNode, useState } from 'react';
import { type ApiKey, api, errorMessage, queries } from '../api.ts';
import { ConfirmDialog } from '../components/ConfirmDialog.tsx';
import { Modal } from '../components/Modal.tsx';
import { SecretField } from '../components/SecretField.tsx';
import {
  EmptyState,
  ErrorState,
  Loading,
  Notice,
  type NoticeMessage,
  PageHeader,
} from '../components/States.tsx';
import { formatDateTime } from '../format.ts';
import { useIsAdmin, usePageTitle } from '../hooks.ts';
import { isSignedOut, redirectToSignIn } from '../session.ts';

function keyLabel(key: Pick<ApiKey, 'name' | 'prefix'>): string {
  return key.name ? `${key.name} (${key.prefix}…)` : `${key.prefix}…`;
}

/**
 * Asks a name, creates the key, then shows it once. The plaintext key is only in this component's
 * state (not in the query cache): closing the dialog unmounts it and the key is gone.
 */
function CreateKeyDialog({ onClose }: { onClose: () => void }) {
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [created, setCreated] = useState<{ apiKey: string; name: string } | null>(null);

  async function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    setPending(true);
    setError(null);
    try {
      const result = await api.keys.create.mutate({ name: name.trim() });
      setCreated({ apiKey: result.api_key, name: result.name });
      void queryClient.invalidateQueries({ queryKey: queries.keys().queryKey });
    } catch (e) {
      if (isSignedOut(e)) redirectToSignIn();
      setError(errorMessage(e));
    } finally {
      setPending(false);
    }
  }

  return (
    <Modal title={created ? 'Your new API key' : 'Create API key'} onClose={onClose} busy={pending}>
      {(close) =>
        created ? (
          <div>
            <div className="modal-body">
              <p>
                The key <strong>{created.name}</strong> is ready. Send it in the <code>Authorization</code>{' '}
                header as <code>Bearer &lt;key&gt;</code>.
              </p>
              <SecretField label="API key" value={created.apiKey} />
              <p className="warning-text">
                This key will not be shown again. Copy it now and store it somewhere safe.
              </p>
            </div>
            <div className="modal-actions">
              <button type="button" className="btn btn-primary" onClick={close}>
                Done
              </button>
            </div>
          </div>
        ) : (
          <form onSubmit={onSubmit}>
            <div className="modal-body">
              <div className="field">
                <label htmlFor="key-name">Name</label>
                <input
                  id="key-name"
                  className="input"
                  required
                  maxLength={100}
                  autoComplete="off"
                  aria-describedby="key-name-hint"
                  value={name}
                  onChange={(e) => setName(e.target.value)}
                />
                <p className="hint" id="key-name-hint">
                  Say where it is used, e.g. "Website backend".
                </p>
              </div>
              {error && (
                <p className="form-error" role="alert">
                  {error}
                </p>
              )}
            </div>
            <div className="modal-actions">
              <button type="button" className="btn" onClick={close} disabled={pending}>
                Cancel
              </button>
              <button type="submit" className="btn btn-primary" disabled={pending || name.trim() === ''}>
                {pending ? 'Creating…' : 'Create'}
              </button>
            </div>
          </form>
        )
      }
    </Modal>
  );
}

export function KeysPage() {
  usePageTitle('API keys');
  const isAdmin = useIsAdmin();
  const queryClient = useQueryClient();
  const keys = useQuery(queries.keys());
  const [creating, setCreating] = useState(false);
  const [revoking, setRevoking] = useState<ApiKey | null>(null);
  const [notice, setNotice] = useState<NoticeMessage | null>(null);

  let body: ReactNode;
  if (keys.isPending) body = <Loading />;
  else if (keys.isError) body = <ErrorState error={keys.error} onRetry={() => keys.refetch()} />;
  else if (keys.data.length === 0)
    body = (
      <EmptyState title="No API keys yet">
        {isAdmin ? 'Create a key to start calling the API.' : 'An admin of your organization can create one.'}
      </EmptyState>
    );
  else
    body = (
      <div className="table-wrap">
        <table className="table">
          <caption className="visually-hidden">API keys</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Key</th>
              <th scope="col">Status</th>
              <th scope="col">Created</th>
              <th scope="col">Created by</th>
              <th scope="col">Last used</th>
              {isAdmin && (
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {keys.data.map((key) => (
              <tr key={key.key_id}>
                <th scope="row" className="cell-strong">
                  {key.name ?? <span className="muted">Unnamed</span>}
                </th>
                <td>
                  <code className="key-prefix">{key.prefix}…</code>
                </td>
                <td>
                  {key.revoked_at ? (
                    <>
                      <span className="badge badge-neutral">Revoked</span>
                      <span className="cell-sub">{formatDateTime(key.revoked_at)}</span>
                    </>
                  ) : (
                    <span className="badge badge-success">Active</span>
                  )}
                </td>
                <td>{formatDateTime(key.created_at)}</td>
                <td>{key.created_by ?? <span className="muted">Unknown</span>}</td>
                <td>{formatDateTime(key.last_used_at, 'Never')}</td>
                {isAdmin && (
                  <td className="cell-actions">
                    {!key.revoked_at && (
                      <button
                        type="button"
                        className="btn btn-small btn-danger-outline"
                        onClick={() => setRevoking(key)}
                      >
                        Revoke
                      </button>
                    )}
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    );

  return (
    <>
      <PageHeader
        title="API keys"
        description="Keys authenticate your applications' requests to the CRM API. Treat them like passwords."
        actions={
          isAdmin && (
            <button type="button" className="btn btn-primary" onClick={() => setCreating(true)}>
              Create API Key
            </button>
          )
        }
      />
      <Notice notice={notice} onDismiss={() => setNotice(null)} />
      {body}
      {creating && <CreateKeyDialog onClose={() => setCreating(false)} />}
      {revoking && (
        <ConfirmDialog
          title="Revoke API key"
          confirmLabel="Revoke"
          onConfirm={() => api.keys.revoke.mutate({ key_id: revoking.key_id })}
          onConfirmed={() => {
            setNotice({ kind: 'success', text: `Revoked ${keyLabel(revoking)}.` });
            void queryClient.invalidateQueries({ queryKey: queries.keys().queryKey });
          }}
          onClose={() => setRevoking(null)}
        >
          <p>
            Revoke <strong>{keyLabel(revoking)}</strong>? Requests that use it will be refused from now on.
            This cannot be undone.
          </p>
        </ConfirmDialog>
      )}
    </>
  );
}
