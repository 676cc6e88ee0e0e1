import type { Scope } from '@crm/api';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, type ReactNode, useId, useState } from 'react';
import { type ApiKey, api, queries } from '../api.ts';
import { ConfirmDialog } from '../components/ConfirmDialog.tsx';
import { InputField } from '../components/Field.tsx';
import { FormError } from '../components/FormError.tsx';
import { Modal, ModalActions } from '../components/Modal.tsx';
import { ShownOnce } from '../components/ShownOnce.tsx';
import { EmptyState, ErrorState, Loading, Notice, PageHeader } from '../components/States.tsx';
import { Table } from '../components/Table.tsx';
import { formatDateTime, localDateTimeToIso, localTimeZone } from '../format.ts';
import {
  useCheckedSet,
  useIsAdmin,
  useOutcome,
  usePageTitle,
  useRequest,
  useRerenderEvery,
} from '../hooks.ts';

/** What a key holds for "every scope, now and later" (ALL_SCOPES in packages/api/src/scopes.ts). */
const FULL_ACCESS = '*';

/**
 * The scopes a key can be limited to, in the server's order: SCOPES in packages/api/src/scopes.ts. The
 * dashboard imports only types from @crm/api, so the list is repeated here; typing it as a Record over
 * the server's Scope type makes a scope added (or renamed) there fail to compile until it is described.
 */
const SCOPE_INFO: Record<Scope, { group: string; description: string }> = {
  'deals:read': { group: 'Deals', description: 'read deals' },
  'deals:write': { group: 'Deals', description: 'create, change, delete deals' },
  'contacts:read': { group: 'Contacts', description: 'read contacts' },
  'contacts:write': { group: 'Contacts', description: 'create and change contacts' },
  'pipeline:read': { group: 'Pipeline, search and AI', description: 'read pipeline stages and health' },
  search: { group: 'Pipeline, search and AI', description: 'search deals and contacts' },
  ai: { group: 'Pipeline, search and AI', description: 'use the AI features (analysis, briefing, coaching)' },
  'usage:read': { group: 'Usage', description: 'read usage and quotas' },
  'webhooks:read': { group: 'Webhooks and events', description: 'read webhooks and deliveries' },
  'webhooks:write': { group: 'Webhooks and events', description: 'manage webhooks, replay deliveries' },
  'events:read': { group: 'Webhooks and events', description: 'read the event feed' },
};
const SCOPES = Object.keys(SCOPE_INFO) as Scope[];
const SCOPE_GROUPS = [...new Set(SCOPES.map((s) => SCOPE_INFO[s].group))].map((group) => ({
  group,
  scopes: SCOPES.filter((s) => SCOPE_INFO[s].group === group),
}));

/** How long a rotated key keeps working next to its successor; the server's default is 24 hours. */
const OVERLAPS = [
  { hours: 0, label: 'No overlap: stop it now' },
  { hours: 1, label: '1 hour' },
  { hours: 24, label: '24 hours (recommended)' },
  { hours: 24 * 7, label: '7 days' },
] as const;
const DEFAULT_OVERLAP_HOURS = 24;

function keyLabel(key: Pick<ApiKey, 'name' | 'prefix'>): string {
  return key.name ? `${key.name} (${key.prefix}…)` : `${key.prefix}…`;
}

const isPast = (iso: string | null, now: number) => iso !== null && Date.parse(iso) <= now;

function DateTime({ iso }: { iso: string }) {
  return <time dateTime={iso}>{formatDateTime(iso)}</time>;
}

/** "Full access", or the key's scopes. */
function ScopeList({ scopes }: { scopes: readonly string[] }) {
  if (scopes.includes(FULL_ACCESS)) return <>Full access</>;
  return (
    <ul className="tag-list">
      {scopes.map((scope) => (
        <li key={scope}>
          <code>{scope}</code>
        </li>
      ))}
    </ul>
  );
}

type IssuedKey = { apiKey: string; scopes: string[]; expiresAt: string | null };

/**
 * A new key's plaintext, shown once, with what it may do and until when. The plaintext lives only in the
 * state of the dialog that got it (never in the query cache): closing the dialog unmounts it.
 */
function ShownOnceKey({
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

/** Asks a name, what the key may do and until when, creates it, then shows it once. */
function CreateKeyDialog({ onClose }: { onClose: () => void }) {
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [access, setAccess] = useState<'full' | 'scoped'>('full');
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
              <fieldset className="fieldset">
                <legend>Access</legend>
                <div className="radio-list">
                  <label className="checkbox">
                    <input
                      type="radio"
                      name="access"
                      value="full"
                      checked={access === 'full'}
                      onChange={() => setAccess('full')}
                      aria-describedby="key-access-full-hint"
                    />
                    Full access
                  </label>
                  <p className="hint choice-hint" id="key-access-full-hint">
                    Every operation, including those added later.
                  </p>
                  <label className="checkbox">
                    <input
                      type="radio"
                      name="access"
                      value="scoped"
                      checked={access === 'scoped'}
                      onChange={() => setAccess('scoped')}
                    />
                    Only these scopes
                  </label>
                </div>
                {access === 'scoped' && (
                  <fieldset className="fieldset scope-fieldset">
                    <legend className="visually-hidden">Scopes</legend>
                    <div className="scope-groups">
                      {SCOPE_GROUPS.map(({ group, scopes: inGroup }) => (
                        <fieldset key={group} className="scope-group">
                          <legend>{group}</legend>
                          {inGroup.map((scope) => (
                            <label key={scope} className="checkbox">
                              <input
                                type="checkbox"
                                name="scopes"
                                value={scope}
                                checked={scopes.has(scope)}
                                onChange={(e) => toggle(scope, e.target.checked)}
                              />
                              <span>
                                <code>{scope}</code> — {SCOPE_INFO[scope].description}
                              </span>
                            </label>
                          ))}
                        </fieldset>
                      ))}
                    </div>
                  </fieldset>
                )}
              </fieldset>
              <InputField
                id="key-expires"
                label="Expires (optional)"
                hint={`In your time zone (${localTimeZone()}). Leave it empty for a key that does not expire.`}
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

/**
 * Asks how long the old key keeps working, rotates it, then shows the successor once (same name, scopes
 * and expiry as the old key).
 */
function RotateKeyDialog({ apiKey, onClose }: { apiKey: ApiKey; onClose: () => void }) {
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

function KeyStatus({ apiKey, successor, now }: { apiKey: ApiKey; successor?: ApiKey; now: number }) {
  const replaced = apiKey.replaced_by && (
    <span className="cell-sub">
      Replaced by {successor ? <code className="key-prefix">{successor.prefix}…</code> : 'a new key'}
      {successor?.revoked_at && ', since revoked: rotate it again'}
    </span>
  );
  if (apiKey.revoked_at)
    return (
      <>
        <span className="badge badge-neutral">Revoked</span>
        <span className="cell-sub">
          <DateTime iso={apiKey.revoked_at} />
        </span>
      </>
    );
  if (isPast(apiKey.expires_at, now))
    return (
      <>
        <span className="badge badge-neutral">Expired</span>
        {replaced}
      </>
    );
  if (apiKey.replaced_by && apiKey.expires_at)
    return (
      <>
        <span className="badge badge-warning">Rotated</span>
        <span className="cell-sub">
          Works until <DateTime iso={apiKey.expires_at} />
        </span>
        {replaced}
      </>
    );
  return <span className="badge badge-success">Active</span>;
}

function KeyExpiry({ iso, now }: { iso: string | null; now: number }) {
  if (!iso) return <>Never</>;
  if (!isPast(iso, now)) return <DateTime iso={iso} />;
  return (
    <>
      <span className="text-danger text-strong">Expired</span>
      <span className="cell-sub">
        <DateTime iso={iso} />
      </span>
    </>
  );
}

export function KeysPage() {
  usePageTitle('API keys');
  const isAdmin = useIsAdmin();
  const keys = useQuery(queries.keys());
  useRerenderEvery(30_000);
  const now = Date.now();
  const [creating, setCreating] = useState(false);
  const [rotating, setRotating] = useState<ApiKey | null>(null);
  const [revoking, setRevoking] = useState<ApiKey | null>(null);
  const outcome = useOutcome();

  let body: ReactNode;
  if (keys.isPending) body = <Loading />;
  else if (keys.isError) body = <ErrorState error={keys.error} onRetry={() => keys.refetch()} />;
  else if (keys.data.length === 0)
    body = (
      <EmptyState title="No API keys yet">
        {isAdmin ? 'Create a key to start calling the API.' : 'An admin of your organization can create one.'}
      </EmptyState>
    );
  else {
    const byId = new Map(keys.data.map((key) => [key.key_id, key]));
    body = (
      <Table
        caption="API keys"
        columns={['Name', 'Key', 'Status', 'Access', 'Expires', 'Created', 'Last used']}
        actions={isAdmin}
      >
        <tbody>
          {keys.data.map((key) => {
            const usable = !key.revoked_at && !isPast(key.expires_at, now);
            return (
              <tr key={key.key_id}>
                <th scope="row" className="cell-strong">
                  {key.name ?? <span className="muted">Unnamed</span>}
                </th>
                <td data-label="Key">
                  <code className="key-prefix">{key.prefix}…</code>
                </td>
                <td data-label="Status">
                  <KeyStatus
                    apiKey={key}
                    successor={key.replaced_by ? byId.get(key.replaced_by) : undefined}
                    now={now}
                  />
                </td>
                <td className="cell-scopes" data-label="Access">
                  <ScopeList scopes={key.scopes} />
                </td>
                <td data-label="Expires">
                  <KeyExpiry iso={key.expires_at} now={now} />
                </td>
                <td data-label="Created">
                  <DateTime iso={key.created_at} />
                  <span className="cell-sub">by {key.created_by ?? 'unknown'}</span>
                </td>
                <td data-label="Last used">
                  {key.last_used_at ? <DateTime iso={key.last_used_at} /> : 'Never'}
                </td>
                {isAdmin && (
                  <td className="cell-actions">
                    {usable && (!key.replaced_by || byId.get(key.replaced_by)?.revoked_at) && (
                      <button type="button" className="btn btn-small" onClick={() => setRotating(key)}>
                        Rotate
                      </button>
                    )}
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
            );
          })}
        </tbody>
      </Table>
    );
  }

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
      <Notice outcome={outcome} />
      {body}
      {creating && <CreateKeyDialog onClose={() => setCreating(false)} />}
      {rotating && <RotateKeyDialog apiKey={rotating} onClose={() => setRotating(null)} />}
      {revoking && (
        <ConfirmDialog
          title="Revoke API key"
          confirmLabel="Revoke"
          onConfirm={() => api.keys.revoke.mutate({ key_id: revoking.key_id })}
          onConfirmed={() => outcome.succeeded(`Revoked ${keyLabel(revoking)}.`, queries.keys().queryKey)}
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
