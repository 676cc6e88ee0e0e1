import { type EntityManager, type FieldChanges, sqlOf, uuidv7, type WebhookEventType } from '@crm/db';
import { currentCall } from './call-context.ts';
import { currentOrg } from './org-scope.ts';

/** A stage as stage events name it. */
export interface StageRef {
  id: string;
  name: string;
  stage_type: string;
}

export interface DomainEvent {
  type: WebhookEventType;
  /** The payload's `data`: the resource exactly as the REST API returns it. */
  data: Record<string, unknown>;
  /** Updates: each changed field with its previous and new value. */
  changes?: FieldChanges;
  /** Stage events: the stage the deal left and the one it entered. */
  stage?: { from: StageRef; to: StageRef };
}

/**
 * Writes a domain event into the outbox, in the caller's transaction (pass the transaction's `em`):
 * it commits or rolls back with the change that caused it. The webhook worker delivers it later.
 * The organization is the request's own. The payload is serialized here, once, as Standard Webhooks
 * lays it out (`type`, `timestamp`, `data`, then this service's `changes` and `stage`), so every
 * attempt to every endpoint sends the same bytes.
 */
export async function emitEvent(em: EntityManager, event: DomainEvent, at: Date = new Date()): Promise<void> {
  await sqlOf(em)
    .insertInto('outbox_events')
    .values(outboxRow(currentOrg(em), event, at))
    .execute();
}

/**
 * The outbox row `emitEvent` inserts: for a write that puts its event in its own statement (a create),
 * so that every door emits the same event by the same code.
 */
export function outboxRow(orgId: string, event: DomainEvent, at: Date) {
  // Who made the change and in which request, for the event feed (the webhook body stays the contract's).
  const call = currentCall();
  return {
    id: uuidv7(),
    org_id: orgId,
    type: event.type,
    payload: outboxPayload(event, at),
    created_at: at,
    actor: (call?.actor as Record<string, unknown> | undefined) ?? null,
    request_id: call?.requestId ?? null,
  };
}

/** The body every endpoint receives for `event`. */
function outboxPayload(event: DomainEvent, at: Date): string {
  return JSON.stringify({
    type: event.type,
    timestamp: at.toISOString(),
    data: event.data,
    ...(event.changes ? { changes: event.changes } : {}),
    ...(event.stage ? { stage: event.stage } : {}),
  });
}
