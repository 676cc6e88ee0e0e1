import { Webhook } from 'standardwebhooks';
import type { Analysis, Company, Contact, Deal, LoggedActivity, StakeholderLink } from './types.ts';

/** A field an update changed: its value before and after, under the API's field name. */
export type FieldChanges = Record<string, { from: unknown; to: unknown }>;
/** A stage as stage events name it. */
export interface StageRef {
  id: string;
  name: string;
  stage_type: string;
}

interface Payload<Type extends string, Data> {
  type: Type;
  /** When the change happened (ISO 8601); deliveries are not ordered, this is. */
  timestamp: string;
  data: Data;
}

/** The body of a webhook, by its `type`: switch on it and `data` is typed. */
export type WebhookEvent =
  | Payload<'deal.created', Deal>
  | (Payload<'deal.updated', Deal> & { changes: FieldChanges })
  | (Payload<'deal.stage_changed' | 'deal.won' | 'deal.lost', Deal> & {
      stage: { from: StageRef; to: StageRef };
    })
  | Payload<'contact.created', Contact>
  | (Payload<'contact.updated', Contact> & { changes: FieldChanges })
  | Payload<'analysis.completed', Analysis & { deal_id: string }>
  | Payload<'company.created', Company>
  | (Payload<'company.updated', Company> & { changes: FieldChanges })
  | Payload<'deal.stakeholder_added', StakeholderLink>
  | Payload<'deal.stakeholder_removed', { deal_id: string; contact_id: string }>
  | Payload<'activity.created', LoggedActivity>
  | (Payload<'activity.updated', LoggedActivity> & { changes: FieldChanges })
  /** Sent from the dashboard's "Send test event", whatever the endpoint subscribed to. */
  | Payload<'webhook.test', { webhook_id: string; message: string }>;

export { WebhookVerificationError } from 'standardwebhooks';

/**
 * Checks a webhook's Standard Webhooks signature and age (at most 5 minutes) and returns its event;
 * throws WebhookVerificationError if it was not signed with `secret` (the endpoint's `whsec_…`). Pass
 * the raw body exactly as received, before any JSON parsing, and the request's headers (a fetch
 * `Headers`, or Node's `req.headers`). Deduplicate on the `webhook-id` header: a retry repeats it.
 */
export function verifyWebhook(
  body: string | Uint8Array,
  headers: Headers | Record<string, string | string[] | undefined>,
  secret: string,
): WebhookEvent {
  const flat: Record<string, string> = {};
  const entries = headers instanceof Headers ? headers.entries() : Object.entries(headers);
  for (const [name, value] of entries) if (value !== undefined) flat[name] = String(value);
  const text = typeof body === 'string' ? body : new TextDecoder().decode(body);
  return new Webhook(secret).verify(text, flat) as WebhookEvent;
}
