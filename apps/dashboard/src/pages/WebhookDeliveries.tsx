import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { type ReactNode, useState } from 'react';
import { Link, useParams } from 'wouter';
import { api, DELIVERY_STATUSES, type Delivery, type DeliveryStatus, queries } from '../api.ts';
import { ActiveBadge, DeliveryStatusBadge, deliveryStatusLabel } from '../components/Badges.tsx';
import { Pager } from '../components/Pager.tsx';
import { EmptyState, ErrorState, Loading, Notice, PageHeader } from '../components/States.tsx';
import { ActionsCell, FullRowCell, RowButton, Table } from '../components/Table.tsx';
import { formatDuration, formatNumber, formatPreciseDateTime } from '../format.ts';
import { useAction, useIsAdmin, useOutcome, usePageTitle } from '../hooks.ts';
import { useWebhookActions, WebhookActionButtons } from './WebhookActions.tsx';

const PAGE_SIZE = 20;
const EXCERPT_LENGTH = 300;

function excerpt(text: string): string {
  return text.length > EXCERPT_LENGTH ? `${text.slice(0, EXCERPT_LENGTH)}…` : text;
}

function Attempts({ delivery }: { delivery: Delivery }) {
  if (delivery.attempts.length === 0) {
    return (
      <p className="muted attempts-empty">
        No attempt yet
        {delivery.next_attempt_at
          ? `; the first is due ${formatPreciseDateTime(delivery.next_attempt_at)}.`
          : '.'}
      </p>
    );
  }
  return (
    <Table
      caption={`Attempts of delivery ${delivery.id}`}
      columns={['Attempt', 'Time', 'HTTP status', { label: 'Duration', num: true }, 'Response']}
      compact
      framed={false}
      className="attempts"
    >
      <tbody>
        {delivery.attempts.map((a) => (
          <tr key={a.attempt}>
            <th scope="row">
              #{a.attempt}{' '}
              <span className={a.succeeded ? 'text-success' : 'text-danger'}>
                {a.succeeded ? 'OK' : 'Failed'}
              </span>
            </th>
            <td data-label="Time">{formatPreciseDateTime(a.attempted_at)}</td>
            <td data-label="HTTP status">
              {a.response_status ?? <span className="muted">No response</span>}
            </td>
            <td className="num" data-label="Duration">
              {formatDuration(a.duration_ms)}
            </td>
            <td className="cell-response" data-label="Response">
              {a.error && <p className="text-danger">{a.error}</p>}
              {a.response_body ? (
                <pre className="response-body">{excerpt(a.response_body)}</pre>
              ) : (
                !a.error && <span className="muted">Empty body</span>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </Table>
  );
}

export function WebhookDeliveriesPage() {
  usePageTitle('Webhook deliveries');
  const { id = '' } = useParams<{ id: string }>();
  const isAdmin = useIsAdmin();
  const [status, setStatus] = useState<DeliveryStatus | ''>('');
  const [offset, setOffset] = useState(0);
  const outcome = useOutcome();
  const webhooks = useQuery(queries.webhooks());
  const webhook = webhooks.data?.find((w) => w.id === id);
  const deliveries = useQuery({
    ...queries.deliveries({ id, limit: PAGE_SIZE, offset, ...(status ? { status } : {}) }),
    placeholderData: keepPreviousData,
  });
  const actions = useWebhookActions(outcome);
  const replay = useAction(outcome, {
    run: (delivery: Delivery) => api.webhooks.replay.mutate({ id, delivery_id: delivery.id }),
    done: (delivery) => `Replayed the ${delivery.event_type} event.`,
    changes: ['webhooks'],
  });

  let body: ReactNode;
  if (deliveries.isPending) body = <Loading />;
  else if (deliveries.isError)
    body = <ErrorState error={deliveries.error} onRetry={() => deliveries.refetch()} />;
  else if (deliveries.data.data.length === 0)
    body = (
      <EmptyState
        title={status ? `No ${deliveryStatusLabel(status).toLowerCase()} deliveries` : 'No deliveries yet'}
      >
        {status ? 'Choose another status to see more.' : 'Deliveries appear here when an event is sent.'}
      </EmptyState>
    );
  else {
    const { data } = deliveries.data;
    body = (
      <>
        <Table
          caption="Deliveries"
          columns={['Event', 'Status', { label: 'Attempts', num: true }, 'Created', 'Next attempt']}
          actions={isAdmin}
          className="deliveries"
        >
          {data.map((delivery) => (
            <tbody key={delivery.id} className="delivery-group">
              <tr className="delivery-row">
                <th scope="row" className="cell-strong">
                  <code>{delivery.event_type}</code>
                  <span className="cell-sub">Event {delivery.event_id}</span>
                </th>
                <td data-label="Status">
                  <DeliveryStatusBadge status={delivery.status} />
                </td>
                <td className="num" data-label="Attempts">
                  {formatNumber(delivery.attempt_count)}
                </td>
                <td data-label="Created">{formatPreciseDateTime(delivery.created_at)}</td>
                <td data-label="Next attempt">{formatPreciseDateTime(delivery.next_attempt_at)}</td>
                <ActionsCell>
                  <RowButton disabled={replay.isPending} onClick={() => replay.mutate(delivery)}>
                    Replay
                  </RowButton>
                </ActionsCell>
              </tr>
              <tr className="attempts-row">
                <FullRowCell>
                  <Attempts delivery={delivery} />
                </FullRowCell>
              </tr>
            </tbody>
          ))}
        </Table>
        <Pager page={deliveries.data} onChange={setOffset} busy={deliveries.isPlaceholderData} />
      </>
    );
  }

  return (
    <>
      <p className="breadcrumb">
        <Link href="/webhooks">← All webhooks</Link>
      </p>
      <PageHeader
        title="Webhook deliveries"
        description={
          webhook ? (
            <>
              <span className="break">{webhook.url}</span> <ActiveBadge active={webhook.is_active} />
            </>
          ) : webhooks.isSuccess ? (
            'This webhook does not exist, or has been deleted.'
          ) : undefined
        }
        actions={
          isAdmin && webhook && <WebhookActionButtons webhook={webhook} actions={actions} place="page" />
        }
      />
      <Notice outcome={outcome} />
      <div className="toolbar">
        <div className="field field-inline">
          <label htmlFor="delivery-status">Status</label>
          <select
            id="delivery-status"
            className="input select"
            value={status}
            onChange={(e) => {
              setStatus(e.target.value as DeliveryStatus | '');
              setOffset(0);
            }}
          >
            <option value="">All</option>
            {DELIVERY_STATUSES.map((s) => (
              <option key={s} value={s}>
                {deliveryStatusLabel(s)}
              </option>
            ))}
          </select>
        </div>
        {deliveries.data?.data.some((d) => d.status === 'pending') && (
          <p className="muted small" role="status">
            Refreshing every few seconds while deliveries are pending.
          </p>
        )}
      </div>
      {body}
    </>
  );
}
