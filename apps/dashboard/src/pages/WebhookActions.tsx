import { Link } from 'wouter';
import { api, type Webhook } from '../api.ts';
import { type Outcome, useAction } from '../hooks.ts';

const changes = ['webhooks'];

/** Send test event and Re-activate, for the endpoint list and an endpoint's delivery log; one of each a page. */
export function useWebhookActions(outcome: Outcome) {
  const sendTest = useAction(outcome, {
    run: (webhook: Webhook) => api.webhooks.sendTest.mutate({ id: webhook.id }),
    done: (webhook) => (
      <>
        Test event sent to {webhook.url}. <Link href={`/webhooks/${webhook.id}`}>See its delivery</Link>.
      </>
    ),
    changes,
  });
  const activate = useAction(outcome, {
    run: (webhook: Webhook) => api.webhooks.activate.mutate({ id: webhook.id }),
    done: (webhook) => `${webhook.url} is active again.`,
    changes,
  });
  return { sendTest, activate };
}

/**
 * The buttons of those actions: Re-activate only for a disabled endpoint. Small in an endpoint's row; at the
 * head of its delivery log, Send test event is the page's main action.
 */
export function WebhookActionButtons({
  webhook,
  actions: { sendTest, activate },
  place,
}: {
  webhook: Webhook;
  actions: ReturnType<typeof useWebhookActions>;
  place: 'row' | 'page';
}) {
  return (
    <>
      {!webhook.is_active && (
        <button
          type="button"
          className={place === 'row' ? 'btn btn-small' : 'btn'}
          disabled={activate.isPending}
          onClick={() => activate.mutate(webhook)}
        >
          Re-activate
        </button>
      )}
      <button
        type="button"
        className={place === 'row' ? 'btn btn-small' : 'btn btn-primary'}
        disabled={sendTest.isPending}
        onClick={() => sendTest.mutate(webhook)}
      >
        Send test event
      </button>
    </>
  );
}
