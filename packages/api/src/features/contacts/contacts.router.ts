import { transaction } from '@crm/db';
import { withIdempotency } from '../../idempotency.ts';
import { dataOf, IdParam } from '../../schemas.ts';
import { authedProcedure, router } from '../../trpc.ts';
import {
  Contact,
  ContactCreateInput,
  ContactDetail,
  ContactList,
  ContactListQuery,
  ContactUpdateInput,
} from './contact.schemas.ts';
import {
  createContact,
  getContactDetail,
  listContacts,
  toContactDto,
  updateContact,
} from './contacts.service.ts';

const tags = ['Contacts'];

export const contactsRouter = router({
  list: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/contacts',
        tags,
        summary: 'List contacts, newest first',
        description:
          'Returns a page of the organization’s contacts (`limit`, `offset`) with `meta.total`; `q` keeps those whose name, e-mail or title contains it, case-insensitively.',
      },
      scope: 'contacts:read',
      agentHint:
        'Use to list stakeholders, optionally only those matching a name, e-mail or title (q). Returns contacts with their role, influence, engagement and sentiment.',
      rateLimit: 'crud',
    })
    .input(ContactListQuery)
    .output(ContactList)
    .query(({ ctx, input }) => listContacts(ctx.em, input)),

  create: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/contacts',
        tags,
        summary: 'Add a stakeholder to a deal',
        description:
          'Adds a contact to a deal (`role_type` defaults to `unknown`), records a `contact_added` activity on the deal and emits `contact.created`; returns the contact with 201. A `deal_id` that is not one of the organization’s deals is a 404; send `Idempotency-Key` to retry safely.',
        successDescription: 'Created',
      },
      scope: 'contacts:write',
      agentHint:
        'Use to add a stakeholder to a deal (deal_id) with role, influence, engagement and sentiment: the AI analysis reads them. Pass idempotency_key when you may retry.',
      idempotencyKey: true,
      errors: ['not_found'],
      successStatus: 201,
      rateLimit: 'crud',
    })
    .input(ContactCreateInput)
    .output(dataOf(Contact))
    .mutation(({ ctx, input }) =>
      withIdempotency(ctx, 'contacts.create', input, (em) =>
        transaction(em, async (tx) => ({ data: toContactDto(await createContact(ctx, tx, input)) })),
      ),
    ),

  get: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/contacts/{id}',
        tags,
        summary: "A contact with its deal's title and company",
        description:
          'Returns the contact with the title and company of its deal. A contact that does not exist or belongs to another organization is a 404.',
      },
      scope: 'contacts:read',
      agentHint: 'Use to read one contact by id.',
    })
    .input(IdParam)
    .output(ContactDetail)
    .query(async ({ ctx, input }) => ({ data: await getContactDetail(ctx.em, input.id) })),

  update: authedProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/contacts/{id}',
        tags,
        summary: 'Change some fields of a contact',
        description:
          'Changes the fields sent and leaves the others alone (`null` clears one; `role_type: null` resets it to `unknown`); when anything changed, records a `contact_updated` activity on the deal and emits `contact.updated`. Returns the contact; an unknown contact is a 404.',
      },
      scope: 'contacts:write',
      agentHint:
        "Use to change a contact's fields, for instance its sentiment or engagement after a meeting.",
    })
    // Adding the path's id drops the body schema's meta: its examples are given again for the document.
    .input(ContactUpdateInput.extend(IdParam.shape).meta({ examples: ContactUpdateInput.meta()?.examples }))
    .output(dataOf(Contact))
    .mutation(({ ctx, input: { id, ...fields } }) =>
      transaction(ctx.em, async (em) => ({
        data: toContactDto((await updateContact(em, id, fields)).contact),
      })),
    ),
});
