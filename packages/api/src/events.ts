import { type EntityManager, sqlOf, type WebhookEventType } from '@crm/db';
import { v7 as uuidv7 } from 'uuid';
import { currentOrg } from './read-model.ts';

export interface DomainEvent {
  type: WebhookEventType;
  /** The `data` member of the delivered payload: the resource as the REST API returns it, plus context. */
  data: Record<string, unknown>;
}

/**
 * Writes a domain event into the outbox, in the caller's transaction (pass the transaction's `em`):
 * it commits or rolls back with the change that caused it. The webhook worker delivers it later.
 * The organization is the request's own.
 */
export async function emitEvent(em: EntityManager, event: DomainEvent, at: Date = new Date()): Promise<void> {
  await sqlOf(em)
    .insertInto('outbox_events')
    .values({ id: uuidv7(), org_id: currentOrg(em), type: event.type, data: event.data, created_at: at })
    .execute();
}
