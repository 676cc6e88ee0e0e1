import { transaction } from '@crm/db';
import { upsertBatch, upsertBatchAnswer, upsertBatchOf } from '../../batch.ts';
import { dataOf, IdParam, SuccessResponse } from '../../schemas.ts';
import { authedProcedure, router } from '../../trpc.ts';
import { companyHistoryProcedures } from '../history/history.router.ts';
import { AsOf } from '../history/history.schemas.ts';
import { asItWas, valuesAsOf } from '../history/history.service.ts';
import {
  createCompany,
  deleteCompany,
  getCompanyDetail,
  listCompanies,
  updateCompany,
} from './companies.service.ts';
import {
  Company,
  CompanyCreateInput,
  CompanyDetail,
  CompanyList,
  CompanyListQuery,
  CompanyQueryBody,
  CompanyUpdateInput,
} from './company.schemas.ts';

const tags = ['Companies'];

export const companiesRouter = router({
  list: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/companies',
        tags,
        summary: 'List companies, newest first',
        description:
          'Returns a page of the organization’s companies (`limit`, `offset`, or `after` a cursor) with `meta.total`; `q` keeps those whose name or domain contains it, case-insensitively; `filter` and `sort` are the filter language’s (docs/api/query.md). With `updated_since` (and `include_deleted=true`), a sync: the records changed (and deleted) since, in the order the changes committed, by a cursor that never skips (docs/api/sync.md).',
      },
      scope: 'companies:read',
      agentHint:
        'Use to list the organization’s companies (accounts), optionally those matching a name or domain (q).',
      rateLimit: 'crud',
    })
    .input(CompanyListQuery)
    .output(CompanyList)
    .query(({ ctx, input }) =>
      listCompanies(ctx.em, input, ctx.principal.scopes, ctx.services.config.search),
    ),

  query: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/companies/query',
        tags,
        summary: 'List companies by a filter in the body',
        description:
          'GET /companies with its parameters in a JSON body, `filter` as an object: for filters too long for a URL. Reads only; the answer is GET /companies’s for the same parameters (docs/api/query.md).',
      },
      scope: 'companies:read',
      agentHint:
        'Use to find companies by conditions on their fields or custom fields (filter: {"field": "industry", "op": "eq", "value": "Manufacturing"}), sorted (sort: "name"). Reads only.',
      rateLimit: 'crud',
      readOnly: true,
    })
    .input(CompanyQueryBody)
    .output(CompanyList)
    .mutation(({ ctx, input }) =>
      listCompanies(ctx.em, input, ctx.principal.scopes, ctx.services.config.search),
    ),

  create: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/companies',
        tags,
        summary: 'Create a company',
        description:
          'Creates a company and emits `company.created`; returns it with 201. `domain` is stored normalized (lower case, no scheme, `www.` or path) and is unique in the organization: a second company with it is a 409 `conflict` naming the first (`conflicting_id`). Send `Idempotency-Key` to retry safely.',
        successDescription: 'Created',
      },
      scope: 'companies:write',
      agentHint:
        'Use to add a company (account) that deals and contacts can then be linked to (company_id). Pass idempotency_key when you may retry.',
      idempotencyKey: true,
      errors: ['conflict'],
      successStatus: 201,
      rateLimit: 'crud',
    })
    .input(CompanyCreateInput)
    .output(dataOf(Company))
    .mutation(({ ctx, input }) =>
      transaction(ctx.em, async (tx) => ({ data: await createCompany(ctx, tx, input) })),
    ),

  batch: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/companies/batch',
        tags,
        summary: 'Create up to 100 companies at once',
        description:
          'Creates every company of `items` (each the body of POST /companies) in one transaction: all or nothing, each emitting `company.created`. An item that fails fails the call with its index (`items[2].domain: …`). Each item counts as one API call against the monthly quota. Send `Idempotency-Key` to retry safely. Returns the companies with 201, in the order given. With `?upsert_on=<a unique custom field of companies>`, an item whose value of that field a company holds changes that company instead (its fields sent, as a PATCH, with `company.updated`), and `meta.results` says for each item whether it was `created` or `updated`.',
        successDescription: 'Created',
      },
      scope: 'companies:write',
      agentHint: 'Use to add many companies at once (an import): up to 100 per call, all or nothing.',
      idempotencyKey: true,
      errors: ['conflict'],
      successStatus: 201,
      rateLimit: 'crud',
      query: ['upsert_on'],
    })
    .input(upsertBatchOf(CompanyCreateInput, 'a company'))
    .output(upsertBatchAnswer(Company))
    .mutation(({ ctx, input }) =>
      upsertBatch(ctx, 'companies', input, {
        create: (em, item) => createCompany(ctx, em, item),
        update: (em, id, item) => updateCompany(em, id, item),
      }),
    ),

  get: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/companies/{id}',
        tags,
        summary: 'A company with its counts and newest deals and contacts',
        description:
          'Returns the company with how many deals (and open deals) and contacts are linked to it, and the newest five of each. An unknown company is a 404. With `as_of`, the company’s fields are as they were then (counts, deals and contacts as they are now; docs/api/history.md).',
      },
      scope: 'companies:read',
      agentHint: 'Use to read one company with the deals and people linked to it.',
    })
    .input(IdParam.extend({ as_of: AsOf }))
    .output(CompanyDetail)
    .query(async ({ ctx, input }) => {
      const detail = await getCompanyDetail(ctx.em, input.id);
      if (!input.as_of) return { data: detail };
      return { data: asItWas(detail, await valuesAsOf(ctx.em, 'company', input.id, input.as_of)) };
    }),

  update: authedProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/companies/{id}',
        tags,
        summary: 'Change some fields of a company',
        description:
          'Changes the fields sent (`null` clears one) and, when anything changed, emits `company.updated` with the changes. A new name is carried to the deals whose `company_name` is the company’s (linked without a name of their own). A `domain` another company holds is a 409; an unknown company is a 404.',
      },
      scope: 'companies:write',
      agentHint: "Use to change a company's fields (industry, size, domain, custom fields).",
      errors: ['conflict'],
    })
    .input(CompanyUpdateInput.extend(IdParam.shape).meta({ examples: CompanyUpdateInput.meta()?.examples }))
    .output(dataOf(Company))
    .mutation(({ ctx, input: { id, ...fields } }) =>
      transaction(ctx.em, async (tx) => ({ data: await updateCompany(tx, id, fields) })),
    ),

  delete: authedProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/companies/{id}',
        tags,
        summary: 'Delete a company (its deals and contacts stay)',
        description:
          'Deletes the company and returns `{"success": true}`. Its deals and contacts stay, unlinked (`company_id` null; a deal keeps its `company_name`). An unknown company is a 404.',
      },
      scope: 'companies:write',
      agentHint:
        'Deletes a company for good (its deals and contacts stay). Only when the user asks for deletion explicitly.',
    })
    .input(IdParam)
    .output(SuccessResponse)
    .mutation(async ({ ctx, input }) => {
      await transaction(ctx.em, (tx) => deleteCompany(tx, input.id));
      return { success: true as const };
    }),

  ...companyHistoryProcedures,
});
