import { useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, type ReactNode, useState } from 'react';
import { Link } from 'wouter';
import { api, type Outputs, queries, type Webhook } from '../api.ts';
import { ActiveBadge, DeliveryStatusBadge } from '../components/Badges.tsx';
import { CodeList } from '../components/CodeList.tsx';
import { ConfirmDialog } from '../components/ConfirmDialog.tsx';
import { InputField } from '../components/Field.tsx';
import { FormError } from '../components/FormError.tsx';
import { Modal, ModalActions } from '../components/Modal.tsx';
import { ShownOnce } from '../components/ShownOnce.tsx';
import { EmptyState, ErrorState, Loading, Notice, PageHeader } from '../components/States.tsx';
import { ActionsCell, RowButton, Table } from '../components/Table.tsx';
import { formatDateTime, formatNumber } from '../format.ts';
import { useCheckedSet, useIsAdmin, useOutcome, usePageTitle, useRequest } from '../hooks.ts';
import { useWebhookActions, WebhookActionButtons } from './WebhookActions.tsx';

type EventType = Outputs['webhooks']['eventTypes'][number];

/** Asks the URL and events, creates the endpoint, then shows its signing secret once (component state only). */
function CreateWebhookDialog({ onClose }: { onClose: () => void }) {
  const queryClient = useQueryClient();
  const eventTypes = useQuery(queries.eventTypes());
  const [url, setUrl] = useState('');
  const [events, toggle, setEvents] = useCheckedSet<EventType>();
  const { pending, error, setError, run } = useRequest();
  const [created, setCreated] = useState<{ secret: string; url: string } | null>(null);

  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (events.size === 0) return setError('Choose at least one event.');
    void run(
      () => api.webhooks.create.mutate({ url: url.trim(), events: [...events] }),
      (result) => {
        setCreated({ secret: result.secret, url: result.url });
        void queryClient.invalidateQueries({ queryKey: queries.webhooks().queryKey });
      },
    );
  }

  let eventChoices: ReactNode;
  if (eventTypes.isPending) eventChoices = <Loading label="Loading event types…" />;
  else if (eventTypes.isError)
    eventChoices = <ErrorState error={eventTypes.error} onRetry={() => eventTypes.refetch()} />;
  else
    eventChoices = (
      <>
        <div className="checkbox-grid">
          {eventTypes.data.map((type) => (
            <label key={type} className="checkbox">
              <input
                type="checkbox"
                name="events"
                value={type}
                checked={events.has(type)}
                onChange={(e) => toggle(type, e.target.checked)}
              />
              <code>{type}</code>
            </label>
          ))}
        </div>
        <button
          type="button"
          className="btn btn-small btn-ghost"
          onClick={() =>
            setEvents(events.size === eventTypes.data.length ? new Set() : new Set(eventTypes.data))
          }
        >
          {events.size === eventTypes.data.length ? 'Clear all' : 'Select all'}
        </button>
      </>
    );

  return (
    <Modal title={created ? 'Webhook created' : 'Create webhook'} onClose={onClose} busy={pending}>
      {(close) =>
        created ? (
          <ShownOnce
            label="Signing secret"
            secret={created.secret}
            warning="This secret will not be shown again. Copy it now and store it somewhere safe."
            onDone={close}
          >
            <p>
              Deliveries to <strong className="break">{created.url}</strong> are signed with this secret. Use
              it to check the <code>webhook-signature</code> header of each request.
            </p>
          </ShownOnce>
        ) : (
          <form onSubmit={onSubmit}>
            <div className="modal-body">
              <InputField
                id="webhook-url"
                label="Endpoint URL"
                type="url"
                inputMode="url"
                placeholder="https://example.com/webhooks/crm"
                required
                autoComplete="off"
                value={url}
                onChange={(e) => setUrl(e.target.value)}
              />
              <fieldset className="fieldset">
                <legend>Events to send</legend>
                {eventChoices}
              </fieldset>
              <FormError error={error} />
            </div>
            <ModalActions onCancel={close} pending={pending} label="Create" pendingLabel="Creating…" />
          </form>
        )
      }
    </Modal>
  );
}

export function WebhooksPage() {
  usePageTitle('Webhooks');
  const isAdmin = useIsAdmin();
  const webhooks = useQuery(queries.webhooks());
  const [creating, setCreating] = useState(false);
  const [deleting, setDeleting] = useState<Webhook | null>(null);
  const outcome = useOutcome();
  const actions = useWebhookActions(outcome);

  let body: ReactNode;
  if (webhooks.isPending) body = <Loading />;
  else if (webhooks.isError) body = <ErrorState error={webhooks.error} onRetry={() => webhooks.refetch()} />;
  else if (webhooks.data.length === 0)
    body = (
      <EmptyState title="No webhooks yet">
        Webhooks send an HTTP POST to your endpoint when something happens in the CRM.
        {isAdmin ? ' Create one to get started.' : ''}
      </EmptyState>
    );
  else
    body = (
      <Table caption="Webhook endpoints" columns={['Endpoint', 'Events', 'Status', 'Last delivery']} actions>
        <tbody>
          {webhooks.data.map((webhook) => (
            <tr key={webhook.id}>
              <th scope="row" className="cell-strong cell-url">
                <Link href={`/webhooks/${webhook.id}`} className="break">
                  {webhook.url}
                </Link>
                <span className="cell-sub">Created {formatDateTime(webhook.created_at)}</span>
              </th>
              <td data-label="Events">
                <CodeList items={webhook.events} />
              </td>
              <td data-label="Status">
                <ActiveBadge active={webhook.is_active} />
                {webhook.failure_count > 0 && (
                  <span className="cell-sub">
                    {formatNumber(webhook.failure_count)} failure{webhook.failure_count === 1 ? '' : 's'} in a
                    row
                  </span>
                )}
              </td>
              <td data-label="Last delivery">
                {webhook.last_delivery ? (
                  <>
                    <DeliveryStatusBadge status={webhook.last_delivery.status} />
                    <span className="cell-sub">{formatDateTime(webhook.last_delivery.at)}</span>
                  </>
                ) : (
                  <span className="muted">None yet</span>
                )}
              </td>
              <ActionsCell>
                <Link href={`/webhooks/${webhook.id}`} className="btn btn-small">
                  Deliveries
                </Link>
                {isAdmin && (
                  <>
                    <WebhookActionButtons webhook={webhook} actions={actions} place="row" />
                    <RowButton danger onClick={() => setDeleting(webhook)}>
                      Delete
                    </RowButton>
                  </>
                )}
              </ActionsCell>
            </tr>
          ))}
        </tbody>
      </Table>
    );

  return (
    <>
      <PageHeader
        title="Webhooks"
        description="Endpoints that receive the CRM's events, signed so you can check they come from us."
        actions={
          isAdmin && (
            <button type="button" className="btn btn-primary" onClick={() => setCreating(true)}>
              Create webhook
            </button>
          )
        }
      />
      <Notice outcome={outcome} />
      {body}
      {creating && <CreateWebhookDialog onClose={() => setCreating(false)} />}
      {deleting && (
        <ConfirmDialog
          title="Delete webhook"
          confirmLabel="Delete"
          onConfirm={() => api.webhooks.delete.mutate({ id: deleting.id })}
          onConfirmed={() => outcome.succeeded(`Deleted the webhook to ${deleting.url}.`, ['webhooks'])}
          onClose={() => setDeleting(null)}
        >
          <p>
            Delete the webhook to <strong className="break">{deleting.url}</strong>? It will receive no more
            events.
          </p>
        </ConfirmDialog>
      )}
    </>
  );
}
