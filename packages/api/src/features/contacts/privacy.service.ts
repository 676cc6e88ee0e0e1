import { Contact, type EntityManager, sqlOf, uuidv7 } from '@crm/db';
import { type SqlBool, sql } from 'kysely';
import { currentCall } from '../../call-context.ts';
import type { AuthedContext } from '../../context.ts';
import { notFound } from '../../errors.ts';
import { redactStoredAnswers } from '../../idempotency.ts';
import { currentOrg, orgDb } from '../../org-scope.ts';
import { isoOf } from '../../read-model.ts';
import { activitiesOfContact, redactActivities } from '../activities/activities.service.ts';
import { contactDeals } from '../deals/stakeholders.service.ts';
import { eventsNaming } from '../events/event-feed.service.ts';
import { toContactDto } from './contacts.service.ts';

async function findContact(em: EntityManager, id: string): Promise<Contact> {
  const contact = await em.findOne(Contact, { id });
  if (!contact) throw notFound('Contact');
  return contact;
}

/**
 * `GET /contacts/{id}/export`: everything the organization holds about the person, in one document: the
 * contact, its links to deals with their roles, the activities that name it, and the events of its feed
 * that name it.
 */
export async function exportContact(ctx: AuthedContext, id: string) {
  const contact = await findContact(ctx.em, id);
  const [deals, activities, logged, events] = await Promise.all([
    contactDeals(ctx.em, id),
    orgDb(ctx.em)
      .selectFrom('activities')
      .select(['id', 'deal_id', 'type', 'description', 'changes', isoOf('created_at').as('created_at')])
      .where('contact_id', '=', id)
      .orderBy('created_at')
      .orderBy('id')
      .execute(),
    activitiesOfContact(ctx.em, id),
    eventsNaming(ctx, id),
  ]);
  return {
    exported_at: new Date().toISOString(),
    contact: toContactDto(contact),
    deals,
    activities: activities.map((a) => ({ ...a, changes: a.changes ?? null })),
    logged_activities: logged,
    events,
  };
}

/** A value as it appears inside JSON text (quotes and backslashes escaped), for finding it in stored JSON. */
const inJson = (value: string) => JSON.stringify(value).slice(1, -1);

/** Text of stored JSON with every occurrence of `values` replaced by `[erased]`. */
function redacted(column: string, values: readonly string[]) {
  let text = sql<string>`${sql.ref(column)}::text`;
  for (const v of values) text = sql<string>`replace(${text}, ${inJson(v)}, '[erased]')`;
  return text;
}

function holdsAny(column: string, values: readonly string[]) {
  return sql<SqlBool>`(${sql.join(
    values.map((v) => sql`position(${inJson(v)} in ${sql.ref(column)}::text) > 0`),
    sql` or `,
  )})`;
}

/**
 * The person in field history (docs/api/history.md): their contact's own rows deleted, their identifiers
 * replaced by `[erased]` in every other value (a deal's contact fields, a custom field naming them).
 */
async function eraseHistory(em: EntityManager, id: string, values: readonly string[]): Promise<number> {
  const db = orgDb(em);
  const own = await db.deleteFrom('field_history').where('record_id', '=', id).executeTakeFirst();
  if (values.length === 0) return Number(own.numDeletedRows);
  const others = await db
    .updateTable('field_history')
    .set({ value: sql`${redacted('value', values)}::jsonb` })
    .where(holdsAny('value', values))
    .executeTakeFirst();
  return Number(own.numDeletedRows) + Number(others.numUpdatedRows);
}

/**
 * The erasure clears the person's name, e-mail and phone from their deals' contact fields without an
 * event: the deals' history records the clearing itself, so their values now read as they are.
 */
async function clearedInHistory(
  em: EntityManager,
  contact: Contact,
  onDeals: readonly string[],
): Promise<void> {
  if (onDeals.length === 0) return;
  const held = await orgDb(em)
    .selectFrom('deals')
    .select([
      'id',
      sql<boolean>`contact_name = ${contact.name}`.as('name'),
      sql<boolean>`contact_email = ${contact.email ?? ''}`.as('email'),
      sql<boolean>`contact_phone = ${contact.phone ?? ''}`.as('phone'),
    ])
    .where('id', 'in', onDeals)
    .execute();
  const at = new Date();
  const actor = currentCall()?.actor;
  const rows = held.flatMap((d) =>
    (['name', 'email', 'phone'] as const)
      .filter((f) => d[f] === true)
      .map((f) => ({
        org_id: currentOrg(em),
        record_type: 'deal' as const,
        record_id: d.id,
        field: `contact_${f}`,
        value: sql`'null'::jsonb`,
        valid_from: at,
        actor: (actor ? JSON.stringify(actor) : null) as never,
        event_id: null,
      })),
  );
  if (rows.length > 0) await sqlOf(em).insertInto('field_history').values(rows).execute();
}

/**
 * `POST /contacts/{id}/erase`, in one transaction: the person is deleted (their links with them), the
 * activities about them keep their type and date but say only "Contact erased", every stored event that
 * is theirs is reduced to `{id, erased: true}`, and their name, e-mail address and phone number are
 * replaced by `[erased]` wherever else stored JSON holds them (other events, AI analyses: a namesake's
 * mention too, erring on the side of the person) and cleared from the contact fields of the deals they are
 * on that hold them; stored answers to retried creates that named them
 * replay `{id, erased: true}`. A receipt without personal data says what went.
 */
export async function eraseContact(em: EntityManager, id: string) {
  const contact = await findContact(em, id);
  // Identifiers short enough to be part of unrelated words are left to the deletes above them.
  const values = [contact.name, contact.email, contact.phone].filter(
    (v): v is string => typeof v === 'string' && v.length >= 3,
  );
  const db = orgDb(em);
  const onDeals = (await contactDeals(em, id)).map((l) => l.deal_id);
  const activities = await db
    .updateTable('activities')
    .set({ description: 'Contact erased', changes: null })
    .where('contact_id', '=', id)
    .executeTakeFirst();
  const ownEvents = await db
    .updateTable('outbox_events')
    .set({
      payload: sql<string>`json_build_object('type', type, 'timestamp', (payload::json ->> 'timestamp'),
        'data', json_build_object('id', ${id}::text, 'erased', true))::text`,
    })
    .where(
      sql<SqlBool>`(payload::json -> 'data' ->> 'id') = ${id}::text or (payload::json -> 'data' ->> 'contact_id') = ${id}::text`,
    )
    .executeTakeFirst();
  let otherEvents = { numUpdatedRows: 0n };
  let analyses = { numUpdatedRows: 0n };
  let deals = { numUpdatedRows: 0n };
  if (values.length > 0) {
    otherEvents = await db
      .updateTable('outbox_events')
      .set({ payload: redacted('payload', values) })
      .where(holdsAny('payload', values))
      .executeTakeFirst();
    analyses = await db
      .updateTable('deal_analyses')
      .set({ result: sql`${redacted('result', values)}::jsonb` })
      .where(holdsAny('result', values))
      .executeTakeFirst();
    await clearedInHistory(em, contact, onDeals);
    deals = await db
      .updateTable('deals')
      .set({
        contact_name: sql`case when contact_name = ${contact.name} then null else contact_name end`,
        contact_email: sql`case when contact_email = ${contact.email ?? ''} then null else contact_email end`,
        contact_phone: sql`case when contact_phone = ${contact.phone ?? ''} then null else contact_phone end`,
      })
      .where('id', 'in', onDeals)
      .where((eb) =>
        eb.or([
          eb('contact_name', '=', contact.name),
          eb('contact_email', '=', contact.email ?? ''),
          eb('contact_phone', '=', contact.phone ?? ''),
        ]),
      )
      .executeTakeFirst();
  }
  const history = await eraseHistory(em, id, values);
  const logged = await redactActivities(em, values);
  const answers = await redactStoredAnswers(em, id);
  await db.deleteFrom('contacts').where('id', '=', id).execute();
  const removed = {
    contacts: 1,
    activities_redacted: Number(activities.numUpdatedRows),
    logged_activities_redacted: logged,
    events_redacted: Number(ownEvents.numUpdatedRows) + Number(otherEvents.numUpdatedRows),
    analyses_redacted: Number(analyses.numUpdatedRows),
    deal_fields_cleared: Number(deals.numUpdatedRows),
    history_values_removed: history,
    stored_answers_redacted: answers,
  };
  const receipt = {
    id: uuidv7(),
    org_id: currentOrg(em),
    contact_id: id,
    erased_at: new Date(),
    actor: JSON.stringify(currentCall()?.actor ?? null) as never,
    removed: JSON.stringify(removed) as never,
  };
  await sqlOf(em).insertInto('erasure_receipts').values(receipt).execute();
  return {
    id: receipt.id,
    contact_id: id,
    erased_at: receipt.erased_at.toISOString(),
    removed,
  };
}
