import { Contact, Deal, type EntityManager, type FieldChanges, uuidv7 } from '@crm/db';
import { activityRow, changeValue, recordActivity, sameValue } from '../../activities.ts';
import type { AuthedContext } from '../../context.ts';
import { notFound } from '../../errors.ts';
import { emitEvent, outboxRow } from '../../events.ts';
import { queryList } from '../../query/list.ts';
import { CONTACTS } from '../../query/objects.ts';
import { syncAnswer, syncedOf, syncList } from '../../query/sync.ts';
import { toIso } from '../../schemas.ts';
import { linkedCompany } from '../companies/companies.service.ts';
import { fieldRules } from '../custom-fields/custom-fields.service.ts';
import { customChanges, customValuesOf } from '../custom-fields/custom-values.ts';
import { contactMatches, likePattern, listByQ, pageByQ, wordsOf } from '../search/search.service.ts';
import { contactRows, listedContact } from './contact.queries.ts';
import type {
  ContactCreateInput,
  ContactDto,
  ContactListQuery,
  ContactQueryBody,
  ContactUpdateInput,
} from './contact.schemas.ts';

export function toContactDto(contact: Contact): ContactDto {
  return {
    id: contact.id,
    name: contact.name,
    email: contact.email ?? null,
    title: contact.title ?? null,
    phone: contact.phone ?? null,
    deal_id: contact.deal.id,
    company_id: contact.companyId ?? null,
    role_type: contact.roleType,
    department: contact.department ?? null,
    influence_level: contact.influenceLevel ?? null,
    engagement_level: contact.engagementLevel ?? null,
    sentiment: contact.sentiment ?? null,
    linkedin_url: contact.linkedinUrl ?? null,
    notes: contact.notes ?? null,
    created_at: contact.createdAt.toISOString(),
    updated_at: toIso(contact.updatedAt),
    custom: contact.custom ?? {},
  };
}

/** `q`'s matches as a list's condition (search's rules, search.service.ts), none without `q`. */
const qMatches = (q: string | undefined) => (q ? [contactMatches(likePattern(q), wordsOf(q))] : []);
/** The plain list's reads (`pageByQ`). */
const CONTACT_LIST = listByQ({
  table: 'contacts',
  alias: 'c',
  what: 'contact',
  rows: contactRows,
  matches: contactMatches,
  counts: 'contact_counts',
  toDto: listedContact,
});
const keptContactCount = CONTACT_LIST.keptCount;

/** The contacts as a sync reads them (docs/api/sync.md). */
const SYNCED_CONTACTS = syncedOf('contacts', () => CONTACTS);

/**
 * A page of contacts, newest first, by `offset` or after a cursor (compared in SQL with the anchor row, at
 * the column's full precision, and read down the (org_id, created_at, id) index). Without `q` the total
 * is the count the database keeps; with `q` the matches are counted up to MATCH_COUNT_BOUND: beyond,
 * `total` is the bound and `total_exact` false ("more than"); `total_exact` (false) is there only then.
 */
export async function listContacts(
  em: EntityManager,
  query: ContactListQuery | ContactQueryBody,
  granted: readonly string[],
  /** Search's configuration: how far a plain list of `q` walks (`pageByQ`). */
  search: { plainUpTo: number },
) {
  if (query.updated_since !== undefined) {
    const page = await syncList(
      em,
      SYNCED_CONTACTS,
      { ...query, updated_since: query.updated_since },
      { granted, where: qMatches(query.q) },
    );
    return { data: page.rows.map(listedContact), ...syncAnswer(page, query.limit) };
  }
  if (query.filter !== undefined || query.sort !== undefined || query.view !== undefined)
    return queryContacts(em, query, granted);
  return pageByQ(em, CONTACT_LIST, query, search);
}

/**
 * GET /contacts and POST /contacts/query with `filter`, `sort` or `view` (a saved view): through the filter
 * language, `q` ANDed with the filter, the total counted exactly (not bounded as `q`'s alone is).
 */
async function queryContacts(
  em: EntityManager,
  query: ContactListQuery | ContactQueryBody,
  granted: readonly string[],
) {
  const page = await queryList(em, CONTACTS, query, {
    granted,
    where: qMatches(query.q),
    // q's matches have no kept count.
    keptTotal: query.q ? undefined : async () => Number((await keptContactCount(em, {}))[0]?.total ?? 0),
  });
  return {
    data: page.rows.map(listedContact),
    meta: { total: page.total, limit: query.limit, offset: query.offset, next_cursor: page.next_cursor },
  };
}

async function findContact(em: EntityManager, id: string): Promise<Contact> {
  const contact = await em.findOne(Contact, { id }, { populate: ['deal'] });
  if (!contact) throw notFound('Contact');
  return contact;
}

export async function getContactDetail(em: EntityManager, id: string) {
  const contact = await findContact(em, id);
  const deal = contact.deal.getEntity();
  return { ...toContactDto(contact), deal: { title: deal.title, company: deal.companyName ?? null } };
}

/**
 * What an imported contact writes (the contact, its 'contact_added' activity, its contact.created event)
 * when its deal is created in the same chunk: rows for one multi-row insert each. The API's own create
 * (below) goes through the unit of work, whose entity gives the same DTO through `toContactDto`.
 */
export function createdContactRows(
  orgId: string,
  dealId: string,
  input: Omit<ContactCreateInput, 'deal_id'>,
  custom: Record<string, unknown>,
  createdAt: Date,
  now: Date,
) {
  // The fields toContactDto reads, as the entity would hold them just created.
  const contact = {
    id: uuidv7(),
    deal: { id: dealId },
    name: input.name,
    email: input.email ?? null,
    title: input.title ?? null,
    phone: input.phone ?? null,
    roleType: input.role_type,
    custom,
    createdAt,
  } as unknown as Contact;
  const dto = toContactDto(contact);
  return {
    contact: {
      id: contact.id,
      org_id: orgId,
      deal_id: dealId,
      name: dto.name,
      email: dto.email,
      title: dto.title,
      phone: dto.phone,
      role_type: dto.role_type,
      custom,
      created_at: createdAt,
    },
    activity: activityRow(
      { id: dealId, orgId },
      {
        type: 'contact_added',
        description: `Contact ${dto.name} added as ${dto.role_type}`,
        contactId: contact.id,
      },
      createdAt,
    ),
    event: outboxRow(orgId, { type: 'contact.created', data: dto }, now),
  };
}

export async function createContact(
  ctx: AuthedContext,
  em: EntityManager,
  input: ContactCreateInput,
): Promise<Contact> {
  const [deal, rules, company] = await Promise.all([
    em.findOne(Deal, { id: input.deal_id }),
    fieldRules(em, 'contacts'),
    input.company_id ? linkedCompany(em, input.company_id) : undefined,
  ]);
  if (!deal) throw notFound('Deal');
  const custom = customValuesOf(rules, 'contacts', input.custom);
  const contact = em.create(Contact, {
    orgId: ctx.principal.orgId,
    deal,
    // The person works where the deal is, unless told otherwise.
    companyId: company?.id ?? deal.companyId ?? null,
    name: input.name,
    email: input.email ?? null,
    title: input.title ?? null,
    phone: input.phone ?? null,
    roleType: input.role_type,
    custom,
    createdAt: new Date(),
  });
  await recordActivity(em, deal, {
    type: 'contact_added',
    description: `Contact ${contact.name} added as ${contact.roleType}`,
    contactId: contact.id,
  });
  await em.flush();
  await emitEvent(em, { type: 'contact.created', data: toContactDto(contact) });
  return contact;
}

const FIELDS = {
  name: 'name',
  email: 'email',
  title: 'title',
  phone: 'phone',
  department: 'department',
  notes: 'notes',
  role_type: 'roleType',
  influence_level: 'influenceLevel',
  engagement_level: 'engagementLevel',
  sentiment: 'sentiment',
  linkedin_url: 'linkedinUrl',
} as const satisfies Record<Exclude<keyof ContactUpdateInput, 'custom' | 'company_id'>, keyof Contact>;

export async function updateContact(
  em: EntityManager,
  id: string,
  input: ContactUpdateInput,
): Promise<{ contact: Contact; changes: FieldChanges }> {
  const contact = await findContact(em, id);
  const entity = contact as unknown as Record<string, unknown>;
  const changes: FieldChanges = {};
  for (const [field, prop] of Object.entries(FIELDS)) {
    let next = input[field as keyof ContactUpdateInput];
    if (next === undefined) continue;
    if (field === 'role_type' && next === null) next = 'unknown';
    if (sameValue(entity[prop], next)) continue;
    changes[field] = { from: changeValue(entity[prop]), to: changeValue(next) };
    entity[prop] = next;
  }
  if (input.company_id !== undefined && input.company_id !== (contact.companyId ?? null)) {
    if (input.company_id !== null) await linkedCompany(em, input.company_id);
    changes.company_id = { from: contact.companyId ?? null, to: input.company_id };
    contact.companyId = input.company_id;
  }
  if (input.custom !== undefined) {
    const current = contact.custom ?? {};
    const next = customValuesOf(await fieldRules(em, 'contacts'), 'contacts', input.custom, current);
    Object.assign(changes, customChanges(current, next));
    contact.custom = next;
  }
  if (Object.keys(changes).length > 0) {
    await recordActivity(em, contact.deal.getEntity(), {
      type: 'contact_updated',
      description: `Contact ${contact.name} updated: ${Object.keys(changes).join(', ')}`,
      changes,
      contactId: contact.id,
    });
  }
  await em.flush();
  if (Object.keys(changes).length > 0)
    await emitEvent(em, { type: 'contact.updated', data: toContactDto(contact), changes });
  return { contact, changes };
}
