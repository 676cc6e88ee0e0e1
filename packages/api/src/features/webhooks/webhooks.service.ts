import {
  type EntityManager,
  sqlOf,
  type Tables,
  TEST_EVENT_TYPE,
  transaction,
  uuidv7,
  WebhookDelivery,
  WebhookEndpoint,
} from '@crm/db';
import { assertPublicTarget, generateSecret, RefusedTargetError, sealSecret } from '@crm/webhooks';
import { type Kysely, type SqlBool, sql } from 'kysely';
import type { OrgScope } from '../../context.ts';
import { ApiError, notFound } from '../../errors.ts';
import { currentOrg, orgDb, orgQuery } from '../../org-scope.ts';
import { checkEventFilter } from '../../query/event-filter.ts';
import { isoOf } from '../../read-model.ts';
import { toIso } from '../../schemas.ts';
import type {
  WebhookCreateInput,
  WebhookDeliveryDto,
  WebhookDeliveryListQuery,
  WebhookDto,
  WebhookUpdateInput,
} from './webhook.schemas.ts';

/** Endpoints per organization: every event fans out to each one. */
export const MAX_WEBHOOKS_PER_ORG = 100;

function toWebhookDto(endpoint: WebhookEndpoint): WebhookDto {
  return {
    id: endpoint.id,
    url: endpoint.url,
    events: [...endpoint.events],
    is_active: endpoint.isActive,
    failure_count: endpoint.failureCount,
    last_triggered_at: toIso(endpoint.lastTriggeredAt),
    created_at: endpoint.createdAt.toISOString(),
    // Only when set: without one, the contract's Webhook exactly.
    ...(endpoint.filter ? { filter: endpoint.filter } : {}),
  };
}

/** The plans of a webhook's filter, one per subscribed kind (400s name `filter/…` and `events/…`). */
const filterPlans = (em: EntityManager, filter: Record<string, unknown>, events: readonly string[]) =>
  checkEventFilter(em, filter, events, { filter: 'filter', types: 'events' });

/** The URL's host must resolve to public addresses only, unless private targets are allowed. */
async function checkTarget(ctx: OrgScope, url: string): Promise<void> {
  if (ctx.services.config.webhooks.allowPrivate) return;
  try {
    await assertPublicTarget(new URL(url));
  } catch (err) {
    if (err instanceof RefusedTargetError) throw new ApiError('invalid_request', `url: ${err.message}`);
    throw err;
  }
}

async function findWebhook(em: EntityManager, id: string): Promise<WebhookEndpoint> {
  const endpoint = await em.findOne(WebhookEndpoint, { id });
  if (!endpoint) throw notFound('Webhook');
  return endpoint;
}

export async function listWebhooks(em: EntityManager): Promise<WebhookDto[]> {
  const endpoints = await em.find(WebhookEndpoint, {}, { orderBy: { createdAt: 'desc', id: 'desc' } });
  return endpoints.map(toWebhookDto);
}

/**
 * Creates an endpoint and returns its secret, the only time it is shown. Unless private targets are
 * allowed, the URL's host must resolve, and only to public addresses (checked again on every delivery);
 * that lookup happens before the transaction, so no connection waits on DNS.
 */
export async function createWebhook(ctx: OrgScope, input: WebhookCreateInput) {
  const settings = ctx.services.config.webhooks;
  await checkTarget(ctx, input.url);
  const plans = input.filter ? await filterPlans(ctx.em, input.filter, input.events) : null;
  return ctx.em.transactional(async (em) => {
    if ((await em.count(WebhookEndpoint, {})) >= MAX_WEBHOOKS_PER_ORG)
      throw new ApiError(
        'invalid_request',
        `An organization can have at most ${MAX_WEBHOOKS_PER_ORG} webhook endpoints; delete one first`,
      );
    const id = uuidv7();
    const secret = generateSecret();
    em.create(WebhookEndpoint, {
      id,
      orgId: ctx.principal.orgId,
      url: input.url,
      events: input.events,
      secret: sealSecret(secret, id, settings.encryptionKey),
      filter: input.filter ?? null,
      filterPlan: plans,
      createdAt: new Date(),
    });
    await em.flush();
    return {
      id,
      secret,
      url: input.url,
      events: input.events,
      ...(input.filter ? { filter: input.filter } : {}),
    };
  });
}

/**
 * Changes an endpoint's URL, kinds or filter (null removes it); the filter, kept or new, is checked again
 * against the kinds. Events fanned out from then on follow the new settings; queued deliveries stay.
 */
export async function updateWebhook(
  ctx: OrgScope,
  id: string,
  input: Omit<WebhookUpdateInput, 'id'>,
): Promise<WebhookDto> {
  if (input.url !== undefined) await checkTarget(ctx, input.url);
  return ctx.em.transactional(async (em) => {
    const endpoint = await findWebhook(em, id);
    const events = input.events ?? [...endpoint.events];
    const filter = input.filter === undefined ? endpoint.filter : input.filter;
    endpoint.filterPlan = filter ? await filterPlans(em, filter, events) : null;
    endpoint.filter = filter ?? null;
    endpoint.events = events;
    if (input.url !== undefined) endpoint.url = input.url;
    await em.flush();
    return toWebhookDto(endpoint);
  });
}

/** Deletes an endpoint with its deliveries and attempts; nothing more is sent to it. */
export async function deleteWebhook(em: EntityManager, id: string): Promise<{ url: string }> {
  const deleted = await orgDb(em)
    .deleteFrom('webhook_endpoints')
    .where('id', '=', id)
    .returning('url')
    .executeTakeFirst();
  if (!deleted) throw notFound('Webhook');
  return deleted;
}

/** Turns a deactivated endpoint back on with a clean failure_count; it receives events from now on. */
export async function activateWebhook(em: EntityManager, id: string): Promise<WebhookDto> {
  const endpoint = await findWebhook(em, id);
  if (!endpoint.isActive) {
    endpoint.isActive = true;
    endpoint.failureCount = 0;
    await em.flush();
  }
  return toWebhookDto(endpoint);
}

/** A delivery as the API shows it, without its attempts. */
type DeliveryRow = Omit<WebhookDeliveryDto, 'attempts'>;

/**
 * Deliveries as the API shows them, their event's type joined (as `d` and `o`). A left join, though every
 * delivery has its event (a required reference, in the same organization): the organization's condition
 * the scope adds on `o` would, on an inner join, count against the page's estimated rows, and for a
 * smaller organization the planner then reads and sorts all of an endpoint's deliveries instead of walking
 * its (endpoint_id, created_at, id) index for the page.
 */
const deliveryRows = (db: Kysely<Tables>) =>
  db
    .selectFrom('webhook_deliveries as d')
    .leftJoin('outbox_events as o', 'o.id', 'd.event_id')
    .select([
      'd.id',
      'd.endpoint_id as webhook_id',
      'd.event_id',
      'o.type as event_type',
      'd.status',
      'd.attempt_count',
      isoOf('d.next_attempt_at').as('next_attempt_at'),
      isoOf('d.created_at').as('created_at'),
      isoOf('d.updated_at').as('updated_at'),
    ]);

/** The attempts of some deliveries, in order (`ids` an array, bound as one parameter). */
const attemptsOf = orgQuery((db, a: { ids: string[] }) =>
  db
    .selectFrom('webhook_attempts')
    .select([
      'delivery_id',
      'attempt',
      isoOf('created_at').as('attempted_at'),
      'duration_ms',
      'response_status',
      'error',
      'response_body',
      'succeeded',
    ])
    .where(sql<SqlBool>`delivery_id = any(${a.ids})`)
    .orderBy('delivery_id')
    .orderBy('attempt'),
);

/** Deliveries with their attempts in order, as the API shows them. */
async function withAttempts(em: EntityManager, rows: DeliveryRow[]): Promise<WebhookDeliveryDto[]> {
  if (rows.length === 0) return [];
  const attempts = await attemptsOf(em, { ids: rows.map((r) => r.id) });
  return rows.map((row) => ({
    ...row,
    attempts: attempts
      .filter((a) => a.delivery_id === row.id)
      .map(({ delivery_id: _delivery, ...attempt }) => attempt),
  }));
}

const deliveryPage = orgQuery(
  (db, a: { endpoint_id: string; status?: WebhookDeliveryDto['status']; limit: number; offset: number }) => {
    let page = deliveryRows(db).where('d.endpoint_id', '=', a.endpoint_id);
    if (a.status) page = page.where('d.status', '=', a.status);
    return page.orderBy('d.created_at', 'desc').orderBy('d.id', 'desc').limit(a.limit).offset(a.offset);
  },
);

const deliveryCount = orgQuery((db, a: { endpoint_id: string; status?: WebhookDeliveryDto['status'] }) => {
  let counted = db
    .selectFrom('webhook_deliveries as d')
    .select((eb) => eb.fn.countAll<string | number>().as('total'))
    .where('d.endpoint_id', '=', a.endpoint_id);
  if (a.status) counted = counted.where('d.status', '=', a.status);
  return counted;
});

/** An endpoint's deliveries, newest first, each with every attempt kept. */
export async function listDeliveries(em: EntityManager, query: WebhookDeliveryListQuery) {
  await findWebhook(em, query.id);
  const status = query.status || undefined;
  const [rows, counted] = await Promise.all([
    deliveryPage(em, { endpoint_id: query.id, status, limit: query.limit, offset: query.offset }),
    deliveryCount(em, { endpoint_id: query.id, status }),
  ]);
  return {
    data: await withAttempts(em, rows as DeliveryRow[]),
    meta: { total: Number(counted[0]?.total ?? 0), limit: query.limit, offset: query.offset },
  };
}

/**
 * Sends a delivery's event to its endpoint again, as a new delivery with a fresh retry schedule and the
 * same webhook-id (receivers that deduplicate on it see the same message). The endpoint must be active.
 */
export async function replayDelivery(
  em: EntityManager,
  params: { id: string; delivery_id: string },
): Promise<WebhookDeliveryDto> {
  const endpoint = await findWebhook(em, params.id);
  const original = await em.findOne(WebhookDelivery, { id: params.delivery_id, endpointId: endpoint.id });
  if (!original) throw notFound('Delivery');
  if (!endpoint.isActive)
    throw new ApiError(
      'webhook_inactive',
      `Webhook ${endpoint.id} is inactive: re-activate it (POST /webhooks/${endpoint.id}/activate) before replaying`,
    );
  return queueDelivery(em, endpoint.id, original.eventId);
}

const oneDelivery = orgQuery((db, a: { id: string }) => deliveryRows(db).where('d.id', '=', a.id));

/** A new pending delivery of an existing event to one endpoint, due now, as the API shows it. */
async function queueDelivery(
  em: EntityManager,
  endpointId: string,
  eventId: string,
): Promise<WebhookDeliveryDto> {
  const id = uuidv7();
  const at = new Date();
  await sqlOf(em)
    .insertInto('webhook_deliveries')
    .values({
      id,
      org_id: currentOrg(em),
      endpoint_id: endpointId,
      event_id: eventId,
      status: 'pending',
      attempt_count: 0,
      next_attempt_at: sql<Date>`now()`,
      created_at: at,
      updated_at: at,
    })
    .execute();
  const rows = await oneDelivery(em, { id });
  return (await withAttempts(em, rows as DeliveryRow[]))[0] as WebhookDeliveryDto;
}

/**
 * Sends a `webhook.test` event to one endpoint, whatever it subscribed to: signed, retried and logged like
 * any other delivery. The event is written as already fanned out, so no other endpoint receives it.
 */
export async function sendTestEvent(em: EntityManager, id: string): Promise<WebhookDeliveryDto> {
  const endpoint = await findWebhook(em, id);
  if (!endpoint.isActive)
    throw new ApiError(
      'webhook_inactive',
      `Webhook ${endpoint.id} is inactive: re-activate it before testing`,
    );
  return transaction(em, async (tx) => {
    const eventId = uuidv7();
    const at = new Date();
    await sqlOf(tx)
      .insertInto('outbox_events')
      .values({
        id: eventId,
        org_id: currentOrg(tx),
        type: TEST_EVENT_TYPE,
        payload: JSON.stringify({
          type: TEST_EVENT_TYPE,
          timestamp: at.toISOString(),
          data: {
            webhook_id: endpoint.id,
            message: 'A test event: this endpoint receives and verifies webhooks',
          },
        }),
        created_at: at,
        dispatched_at: at,
      })
      .execute();
    return queueDelivery(tx, endpoint.id, eventId);
  });
}

const newestDeliveries = orgQuery((db) =>
  db
    .selectFrom('webhook_endpoints as e')
    .crossJoinLateral((eb) =>
      eb
        .selectFrom('webhook_deliveries')
        .select(['status', 'updated_at'])
        .whereRef('endpoint_id', '=', 'e.id')
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(sql.lit(1))
        .as('d'),
    )
    .select(['e.id as endpoint_id', 'd.status', isoOf('d.updated_at').as('at')]),
);

/** Each endpoint's newest delivery: its status and when it last changed. */
export async function lastDeliveries(
  em: EntityManager,
): Promise<Map<string, { status: WebhookDeliveryDto['status']; at: string }>> {
  const rows = await newestDeliveries(em, {});
  return new Map(rows.map((r) => [r.endpoint_id, { status: r.status, at: r.at }]));
}
