import { useQuery } from '@tanstack/react-query';
import { type ReactNode, useState } from 'react';
import { type ApiKey, api, queries } from '../api.ts';
import { ConfirmDialog } from '../components/ConfirmDialog.tsx';
import { EmptyState, ErrorState, Loading, Notice, PageHeader } from '../components/States.tsx';
import { Table } from '../components/Table.tsx';
import { useIsAdmin, useOutcome, usePageTitle, useRerenderEvery } from '../hooks.ts';
import { CreateKeyDialog } from './keys/CreateKeyDialog.tsx';
import { keyLabel } from './keys/KeyFacts.tsx';
import { KeyRow } from './keys/KeyRow.tsx';
import { RotateKeyDialog } from './keys/RotateKeyDialog.tsx';

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
          {keys.data.map((key) => (
            <KeyRow
              key={key.key_id}
              apiKey={key}
              successor={key.replaced_by ? byId.get(key.replaced_by) : undefined}
              now={now}
              onRotate={() => setRotating(key)}
              onRevoke={() => setRevoking(key)}
            />
          ))}
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
