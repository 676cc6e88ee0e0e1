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
      openapi: { method: 'GET', path: '/contacts', tags, summary: 'List contacts, newest first' },
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
        successDescription: 'Created',
      },
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
      },
    })
    .input(IdParam)
    .output(ContactDetail)
    .query(async ({ ctx, input }) => ({ data: await getContactDetail(ctx.em, input.id) })),

  update: authedProcedure
    .meta({
      openapi: { method: 'PATCH', path: '/contacts/{id}', tags, summary: 'Change some fields of a contact' },
    })
    .input(ContactUpdateInput.extend(IdParam.shape))
    .output(dataOf(Contact))
    .mutation(({ ctx, input: { id, ...fields } }) =>
      transaction(ctx.em, async (em) => ({
        data: toContactDto((await updateContact(em, id, fields)).contact),
      })),
    ),
});
