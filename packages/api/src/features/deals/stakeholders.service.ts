import { Contact, Deal, type EntityManager, sqlOf, type Tables } from '@crm/db';
import { expressionBuilder, sql } from 'kysely';
import { jsonBuildObject } from 'kysely/helpers/postgres';
import { recordActivity } from '../../activities.ts';
import { conflict, notFound } from '../../errors.ts';
import { emitEvent } from '../../events.ts';
import { currentOrg, orgDb, orgQuery } from '../../org-scope.ts';
import { isoOf } from '../../read-model.ts';
import { updateContact } from '../contacts/contacts.service.ts';
import type { StakeholderLinkDto, StakeholderLinkInput } from './stakeholder.schemas.ts';

/** The columns of a stakeholder row (`stakeholdersOf`) a caller may put in its json objects. */
type StakeholderColumn =
  | 'id'
  | 'deal_id'
  | 'name'
  | 'email'
  | 'title'
  | 'role_type'
  | 'influence_level'
  | 'engagement_level'
  | 'sentiment'
  | 'is_primary'
  | 'notes'
  | 'created_at';

/**
 * A deal's stakeholders as one json array of `columns`, oldest link first: its own contacts (their role
 * the contact's fields) and the contacts linked to it (their role the link's; `created_at` is when they
 * were linked). What the deal detail answers and the AI reads: one definition of "the people on this
 * deal", correlated with the outer query's deal `d`.
 */
export const stakeholdersOf = (columns: readonly StakeholderColumn[]) => {
  const eb = expressionBuilder<Tables, never>();
  const dealId = sql.ref<string>('d.id');
  const isPrimary = sql<boolean>`${sql.ref('d.primary_contact_id')} is not distinct from c.id`;
  const own = eb
    .selectFrom('contacts as c')
    .select([
      'c.id',
      'c.deal_id',
      'c.name',
      'c.email',
      'c.title',
      'c.role_type',
      'c.influence_level',
      'c.engagement_level',
      'c.sentiment',
      isPrimary.as('is_primary'),
      'c.notes',
      'c.created_at',
    ])
    .where('c.deal_id', '=', dealId);
  const linked = eb
    .selectFrom('deal_stakeholders as ds')
    .innerJoin('contacts as c', 'c.id', 'ds.contact_id')
    .select([
      'c.id',
      'ds.deal_id',
      'c.name',
      'c.email',
      'c.title',
      'ds.role_type',
      'ds.influence_level',
      'ds.engagement_level',
      'ds.sentiment',
      isPrimary.as('is_primary'),
      'c.notes',
      'ds.created_at',
    ])
    .where('ds.deal_id', '=', dealId);
  return eb.selectFrom(own.unionAll(linked).as('k')).select((k) =>
    sql<unknown>`coalesce(${k.fn
      .jsonAgg(jsonBuildObject(Object.fromEntries(columns.map((c) => [c, k.ref(`k.${c}`)]))))
      .orderBy('k.created_at')
      .orderBy('k.id')}, '[]'::json)`.as('list'),
  );
};

/** Every link of a contact (its own deal first, then the others as linked), with each deal's title and stage. */
const linksOfContact = orgQuery((db, a: { contact_id: string }) =>
  db
    .selectFrom((eb) =>
      eb
        .selectFrom('contacts as c')
        .select([
          'c.deal_id',
          'c.id as contact_id',
          'c.role_type',
          'c.influence_level',
          'c.engagement_level',
          'c.sentiment',
          sql.lit(true).as('own_deal'),
          'c.created_at as linked_at',
        ])
        .where('c.id', '=', a.contact_id)
        .unionAll(
          eb
            .selectFrom('deal_stakeholders as ds')
            .select([
              'ds.deal_id',
              'ds.contact_id',
              'ds.role_type',
              'ds.influence_level',
              'ds.engagement_level',
              'ds.sentiment',
              sql.lit(false).as('own_deal'),
              'ds.created_at as linked_at',
            ])
            .where('ds.contact_id', '=', a.contact_id),
        )
        .as('l'),
    )
    .innerJoin('deals as d', 'd.id', 'l.deal_id')
    .leftJoin('pipeline_stages as s', 's.id', 'd.stage_id')
    .select([
      'l.deal_id',
      'l.contact_id',
      'l.role_type',
      'l.influence_level',
      'l.engagement_level',
      'l.sentiment',
      sql<boolean>`d.primary_contact_id is not distinct from l.contact_id`.as('is_primary'),
      'l.own_deal',
      isoOf('l.linked_at').as('linked_at'),
      'd.title',
      's.name as stage_name',
      's.stage_type',
    ])
    .orderBy(sql`l.own_deal`, 'desc')
    .orderBy(sql`l.linked_at`)
    .orderBy('l.deal_id'),
);

type LinkRow = Awaited<ReturnType<typeof linksOfContact>>[number];

const toLink = (row: LinkRow): StakeholderLinkDto => ({
  deal_id: row.deal_id,
  contact_id: row.contact_id,
  role_type: row.role_type as StakeholderLinkDto['role_type'],
  influence_level: (row.influence_level as StakeholderLinkDto['influence_level']) ?? null,
  engagement_level: (row.engagement_level as StakeholderLinkDto['engagement_level']) ?? null,
  sentiment: (row.sentiment as StakeholderLinkDto['sentiment']) ?? null,
  is_primary: Boolean(row.is_primary),
  own_deal: Boolean(row.own_deal),
  linked_at: row.linked_at,
});

/** `GET /contacts/{id}/deals`: every deal the contact is on, with the role of each link. */
export async function contactDeals(em: EntityManager, contactId: string) {
  const rows = await linksOfContact(em, { contact_id: contactId });
  if (rows.length === 0) throw notFound('Contact');
  return rows.map((row) => ({
    ...toLink(row),
    title: row.title,
    stage_name: row.stage_name ?? null,
    stage_type: row.stage_type ?? null,
  }));
}

async function linkOf(em: EntityManager, dealId: string, contactId: string): Promise<StakeholderLinkDto> {
  const row = (await linksOfContact(em, { contact_id: contactId })).find((r) => r.deal_id === dealId);
  if (!row) throw new Error(`no link of contact ${contactId} to deal ${dealId}`);
  return toLink(row);
}

/**
 * The deal (locked until the transaction ends, so two writers of one deal's links take turns and the caps
 * hold) and the contact, or a 404 naming the one that is not the organization's.
 */
async function dealAndContact(em: EntityManager, dealId: string, contactId: string) {
  const locked = await orgDb(em)
    .selectFrom('deals')
    .select('id')
    .where('id', '=', dealId)
    .forNoKeyUpdate()
    .executeTakeFirst();
  if (!locked) throw notFound('Deal');
  const [deal, contact] = await Promise.all([
    em.findOneOrFail(Deal, { id: dealId }),
    em.findOne(Contact, { id: contactId }),
  ]);
  if (!contact) throw notFound('Contact');
  return { deal, contact, own: contact.deal.id === dealId };
}

/** Another contact that is the deal's economic buyer, by its own role or by a link's. */
async function otherEconomicBuyer(em: EntityManager, dealId: string, contactId: string) {
  const db = orgDb(em);
  const row = await db
    .selectFrom('contacts')
    .select('id')
    .where('deal_id', '=', dealId)
    .where('role_type', '=', 'economic_buyer')
    .where('id', '<>', contactId)
    .unionAll(
      db
        .selectFrom('deal_stakeholders')
        .select('contact_id as id')
        .where('deal_id', '=', dealId)
        .where('role_type', '=', 'economic_buyer')
        .where('contact_id', '<>', contactId),
    )
    .limit(1)
    .executeTakeFirst();
  return row?.id;
}

const ROLE_FIELDS = ['role_type', 'influence_level', 'engagement_level', 'sentiment'] as const;

/**
 * `PUT /deals/{id}/stakeholders/{contact_id}`: links the contact to the deal with the role sent, or
 * changes the role of its link (the fields sent; a second identical PUT changes nothing). On the
 * contact's own deal the role is the contact's own fields, changed as PATCH /contacts changes them. At
 * most one economic buyer and one primary contact per deal: a 409 naming the holder.
 */
export async function putStakeholder(
  em: EntityManager,
  dealId: string,
  contactId: string,
  input: StakeholderLinkInput,
): Promise<StakeholderLinkDto> {
  const { deal, contact, own } = await dealAndContact(em, dealId, contactId);
  if (input.role_type === 'economic_buyer') {
    const holder = await otherEconomicBuyer(em, dealId, contactId);
    if (holder) throw conflict(`role_type: contact ${holder} is already this deal’s economic buyer`, holder);
  }
  const primary = deal.primaryContactId ?? null;
  if (input.is_primary === true && primary !== null && primary !== contactId)
    throw conflict(`is_primary: contact ${primary} is already this deal’s primary contact`, primary);

  const sent = Object.fromEntries(
    ROLE_FIELDS.filter((f) => input[f] !== undefined).map((f) => [f, input[f]]),
  );
  let added = false;
  if (own) {
    if (Object.keys(sent).length > 0) await updateContact(em, contactId, sent);
  } else {
    const now = new Date();
    const inserted = await sqlOf(em)
      .insertInto('deal_stakeholders')
      .values({
        org_id: currentOrg(em),
        deal_id: dealId,
        contact_id: contactId,
        role_type: input.role_type ?? 'unknown',
        influence_level: input.influence_level ?? null,
        engagement_level: input.engagement_level ?? null,
        sentiment: input.sentiment ?? null,
        created_at: now,
      })
      .onConflict((oc) => oc.columns(['deal_id', 'contact_id']).doNothing())
      .returning('contact_id')
      .executeTakeFirst();
    added = inserted !== undefined;
    if (!added && Object.keys(sent).length > 0)
      await orgDb(em)
        .updateTable('deal_stakeholders')
        .set({ ...sent, updated_at: now })
        .where('deal_id', '=', dealId)
        .where('contact_id', '=', contactId)
        .execute();
  }
  if (input.is_primary === true) deal.primaryContactId = contactId;
  if (input.is_primary === false && primary === contactId) deal.primaryContactId = null;
  if (added)
    await recordActivity(em, deal, {
      type: 'stakeholder_added',
      description: `Contact ${contact.name} linked as ${input.role_type ?? 'unknown'}`,
      contactId,
    });
  await em.flush();
  const link = await linkOf(em, dealId, contactId);
  if (added) await emitEvent(em, { type: 'deal.stakeholder_added', data: link });
  return link;
}

/**
 * `DELETE /deals/{id}/stakeholders/{contact_id}`: the link goes (a link that is not there: nothing to do).
 * A contact's own deal is no link to remove: the contact is that deal's (delete it, or link it elsewhere).
 */
export async function removeStakeholder(em: EntityManager, dealId: string, contactId: string): Promise<void> {
  const { deal, contact, own } = await dealAndContact(em, dealId, contactId);
  if (own)
    throw conflict(
      'contact_id: this is the contact’s own deal (its deal_id), not a link: delete the contact instead',
    );
  const removed = await orgDb(em)
    .deleteFrom('deal_stakeholders')
    .where('deal_id', '=', dealId)
    .where('contact_id', '=', contactId)
    .executeTakeFirst();
  if (Number(removed.numDeletedRows) === 0) return;
  if (deal.primaryContactId === contactId) deal.primaryContactId = null;
  await recordActivity(em, deal, {
    type: 'stakeholder_removed',
    description: `Contact ${contact.name} unlinked`,
    contactId,
  });
  await em.flush();
  await emitEvent(em, { type: 'deal.stakeholder_removed', data: { deal_id: dealId, contact_id: contactId } });
}
