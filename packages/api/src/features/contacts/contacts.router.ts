import { transaction } from '@crm/db';
import { z } from 'zod';
import { upsertBatch, upsertBatchAnswer, upsertBatchOf } from '../../batch.ts';
import { dataOf, IdParam } from '../../schemas.ts';
import { authedProcedure, router } from '../../trpc.ts';
import { ContactDeal } from '../deals/stakeholder.schemas.ts';
import { contactDeals } from '../deals/stakeholders.service.ts';
import { contactHistoryProcedures } from '../history/history.router.ts';
import { AsOf } from '../history/history.schemas.ts';
import { asItWas, valuesAsOf } from '../history/history.service.ts';
import {
  Contact,
  ContactCreateInput,
  ContactDetail,
  ContactList,
  ContactListQuery,
  ContactQueryBody,
  ContactUpdateInput,
} from './contact.schemas.ts';
import {
  createContact,
  getContactDetail,
  listContacts,
  toContactDto,
  updateContact,
} from './contacts.service.ts';
import { ContactExport, ErasureReceipt } from './privacy.schemas.ts';
import { eraseContact, exportContact } from './privacy.service.ts';

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
          'Returns a page of the organization’s contacts (`limit`, `offset`) with `meta.total`; `q` keeps those whose name, e-mail or title contains it, case-insensitively. `filter` (a JSON tree: any field of the contact, `custom.<key>`, `deal.<field>`) and `sort` (`name,-created_at`) narrow and order it; with either, `meta.total` is exact. An unknown field, an operator or value that does not fit is a 400 naming the node (docs/api/query.md). With `updated_since` (and `include_deleted=true`), a sync: the records changed (and deleted) since, in the order the changes committed, by a cursor that never skips (docs/api/sync.md).',
      },
      scope: 'contacts:read',
      agentHint:
        'Use to list stakeholders, optionally only those matching a name, e-mail or title (q), or a filter on their fields, custom fields or their deal’s, in a sort order. Returns contacts with their role, influence, engagement and sentiment.',
      rateLimit: 'crud',
    })
    .input(ContactListQuery)
    .output(ContactList)
    .query(({ ctx, input }) => listContacts(ctx.em, input, ctx.principal.scopes, ctx.services.config.search)),

  query: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/contacts/query',
        tags,
        summary: 'List contacts by a filter in the body',
        description:
          'GET /contacts with its parameters in a JSON body, `filter` as an object: for filters too long for a URL. Reads only; the answer is GET /contacts’s for the same parameters (docs/api/query.md).',
      },
      scope: 'contacts:read',
      agentHint:
        'Use to find stakeholders by conditions on their fields, custom fields or their deal (filter: {"and": [{"field": "role_type", "op": "eq", "value": "champion"}, {"field": "deal.stage_type", "op": "eq", "value": "open"}]}), sorted (sort: "name"). Reads only.',
      rateLimit: 'crud',
      readOnly: true,
    })
    .input(ContactQueryBody)
    .output(ContactList)
    .mutation(({ ctx, input }) =>
      listContacts(ctx.em, input, ctx.principal.scopes, ctx.services.config.search),
    ),

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
      errors: ['not_found', 'conflict'],
      successStatus: 201,
      rateLimit: 'crud',
    })
    .input(ContactCreateInput)
    .output(dataOf(Contact))
    .mutation(({ ctx, input }) =>
      transaction(ctx.em, async (tx) => ({ data: toContactDto(await createContact(ctx, tx, input)) })),
    ),

  batch: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/contacts/batch',
        tags,
        summary: 'Add up to 100 stakeholders at once',
        description:
          'Adds every contact of `items` (each the body of POST /contacts) in one transaction: all or nothing. Each records its `contact_added` activity and emits `contact.created`, as a single create does; an item that fails fails the call with its index (`items[2].deal_id: …`, a 404 for a deal that is not the organization’s). Each item counts as one API call against the monthly quota; a batch the quota cannot take answers 429 and adds nothing. Send `Idempotency-Key` to retry safely. Returns the contacts with 201, in the order given. With `?upsert_on=<a unique custom field of contacts>`, an item whose value of that field a contact holds changes that contact instead (its fields sent, as a PATCH, with `contact.updated`; the contact keeps its own deal, whatever `deal_id` says), and `meta.results` says for each item whether it was `created` or `updated`.',
        successDescription: 'Created',
      },
      scope: 'contacts:write',
      agentHint:
        'Use to add many stakeholders at once (an import): up to 100 per call, all or nothing. Pass idempotency_key when you may retry.',
      idempotencyKey: true,
      errors: ['not_found', 'conflict'],
      successStatus: 201,
      rateLimit: 'crud',
      query: ['upsert_on'],
    })
    .input(upsertBatchOf(ContactCreateInput, 'a contact'))
    .output(upsertBatchAnswer(Contact))
    .mutation(({ ctx, input }) =>
      upsertBatch(ctx, 'contacts', input, {
        create: async (em, item) => toContactDto(await createContact(ctx, em, item)),
        // The contact keeps its deal: `deal_id` is no field of a PATCH (stakeholder links add others).
        update: async (em, id, { deal_id: _deal, ...fields }) =>
          toContactDto((await updateContact(em, id, fields)).contact),
      }),
    ),

  get: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/contacts/{id}',
        tags,
        summary: "A contact with its deal's title and company",
        description:
          'Returns the contact with the title and company of its deal. A contact that does not exist or belongs to another organization is a 404. With `as_of`, the contact’s fields are as they were then (its deal’s title and company as they are now; docs/api/history.md).',
      },
      scope: 'contacts:read',
      agentHint: 'Use to read one contact by id.',
    })
    .input(IdParam.extend({ as_of: AsOf }))
    .output(ContactDetail)
    .query(async ({ ctx, input }) => {
      const detail = await getContactDetail(ctx.em, input.id);
      if (!input.as_of) return { data: detail };
      return { data: asItWas(detail, await valuesAsOf(ctx.em, 'contact', input.id, input.as_of)) };
    }),

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
      errors: ['conflict'],
    })
    // Adding the path's id drops the body schema's meta: its examples are given again for the document.
    .input(ContactUpdateInput.extend(IdParam.shape).meta({ examples: ContactUpdateInput.meta()?.examples }))
    .output(dataOf(Contact))
    .mutation(({ ctx, input: { id, ...fields } }) =>
      transaction(ctx.em, async (em) => ({
        data: toContactDto((await updateContact(em, id, fields)).contact),
      })),
    ),

  deals: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/contacts/{id}/deals',
        tags,
        summary: 'The deals a contact is on, with its role on each',
        description:
          'Returns every deal the contact is a stakeholder of: its own deal (`own_deal: true`, its `deal_id`) first, then the deals it was linked to (PUT /deals/{id}/stakeholders/{contact_id}), oldest link first, each with the role of that link, `is_primary`, and the deal’s title and stage. An unknown contact is a 404.',
      },
      scope: 'contacts:read',
      agentHint: 'Use to see every deal a person is involved in, and their role on each.',
    })
    .input(IdParam)
    .output(dataOf(z.array(ContactDeal)))
    .query(async ({ ctx, input }) => ({ data: await contactDeals(ctx.em, input.id) })),

  export: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/contacts/{id}/export',
        tags,
        summary: 'Everything held about a person, in one document',
        description:
          'Returns one JSON document with the contact, the deals it is on with its role on each, the activities that name it and the events of the feed that name it (for a data subject’s access request). An unknown contact is a 404.',
      },
      scope: 'contacts:read',
      agentHint: 'Use when a person asks for a copy of the data held about them.',
    })
    .input(IdParam)
    .output(dataOf(ContactExport))
    .query(async ({ ctx, input }) => ({ data: await exportContact(ctx, input.id) })),

  erase: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/contacts/{id}/erase',
        tags,
        summary: 'Erase a person and their data for good',
        description:
          'Deletes the contact and its links, reduces the activities and events about it to their type and date, replaces its name, e-mail address and phone number with `[erased]` wherever stored events and AI analyses hold them, and answers a receipt without personal data saying what was removed. Cannot be undone; needs the `contacts:erase` scope. An unknown contact is a 404.',
      },
      scope: 'contacts:erase',
      agentHint:
        'Erases a person for good (a right-to-erasure request). Only when the user asks for it explicitly.',
    })
    .input(IdParam)
    .output(dataOf(ErasureReceipt))
    .mutation(({ ctx, input }) =>
      transaction(ctx.em, async (tx) => ({ data: await eraseContact(tx, input.id) })),
    ),

  ...contactHistoryProcedures,
});
