import { Contact, Deal, type EntityManager, type FieldChanges } from '@crm/db';
import { changeValue, recordActivity, sameValue } from '../../activities.ts';
import type { AuthedContext } from '../../context.ts';
import { notFound } from '../../errors.ts';
import { emitEvent } from '../../events.ts';
import { toIso } from '../../schemas.ts';
import { likePattern } from '../search/search.service.ts';
import type {
  ContactCreateInput,
  ContactDto,
  ContactListQuery,
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
    role_type: contact.roleType,
    department: contact.department ?? null,
    influence_level: contact.influenceLevel ?? null,
    engagement_level: contact.engagementLevel ?? null,
    sentiment: contact.sentiment ?? null,
    linkedin_url: contact.linkedinUrl ?? null,
    notes: contact.notes ?? null,
    created_at: contact.createdAt.toISOString(),
    updated_at: toIso(contact.updatedAt),
  };
}

export async function listContacts(em: EntityManager, query: ContactListQuery) {
  const where = query.q
    ? {
        $or: [
          { name: { $ilike: likePattern(query.q) } },
          { email: { $ilike: likePattern(query.q) } },
          { title: { $ilike: likePattern(query.q) } },
        ],
      }
    : {};
  const [contacts, total] = await em.findAndCount(Contact, where, {
    orderBy: { createdAt: 'desc', id: 'desc' },
    limit: query.limit,
    offset: query.offset,
  });
  return { data: contacts.map(toContactDto), meta: { total, limit: query.limit, offset: query.offset } };
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

export async function createContact(
  ctx: AuthedContext,
  em: EntityManager,
  input: ContactCreateInput,
): Promise<Contact> {
  const deal = await em.findOne(Deal, { id: input.deal_id });
  if (!deal) throw notFound('Deal');
  const contact = em.create(Contact, {
    orgId: ctx.principal.orgId,
    deal,
    name: input.name,
    email: input.email ?? null,
    title: input.title ?? null,
    phone: input.phone ?? null,
    roleType: input.role_type,
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
} as const satisfies Record<keyof ContactUpdateInput, keyof Contact>;

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
