import { z } from 'zod';
import { FilterBody, FilterParam, SortParam, ViewParam } from '../../query/schemas.ts';
import {
  checkSyncInput,
  SyncAfter,
  SyncDeleted,
  SyncMetaFields,
  SyncParams,
  SyncTotalExact,
} from '../../query/sync-schemas.ts';
import { CursorPaginationMeta, DateTimeOut, Pagination, ShortText, Text, Uuid } from '../../schemas.ts';
import { CustomValues, CustomValuesInput } from '../custom-fields/custom-field.schemas.ts';

/** Head counts as LinkedIn and most enrichment providers bucket them: what a client has to send. */
export const COMPANY_SIZES = [
  '1-10',
  '11-50',
  '51-200',
  '201-500',
  '501-1000',
  '1001-5000',
  '5001-10000',
  '10001+',
] as const;

const Name = Text().trim().min(1).max(500);

/**
 * A domain as stored: the host of what was sent (a bare `acme.com`, or a URL), lower case (IDNs as
 * punycode, WHATWG URL's own rules), without `www.`, scheme, port or path. Two spellings of one domain are
 * one value, so the organization's uniqueness holds for what people mean.
 */
export const Domain = Text()
  .trim()
  .min(1)
  .max(253)
  .transform((sent, ctx) => {
    const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(sent) ? sent : `http://${sent}`;
    let host: string;
    try {
      host = new URL(withScheme).hostname;
    } catch {
      host = '';
    }
    host = host.replace(/^www\./, '').replace(/\.$/, '');
    if (!/^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/.test(host)) {
      ctx.addIssue({ code: 'custom', message: `not a domain name: ${JSON.stringify(sent)} (acme.com)` });
      return z.NEVER;
    }
    return host;
  })
  .meta({
    description: 'Stored lower case without scheme, www. or path: "https://www.Acme.com/about" is acme.com',
  });

const Website = z.url({ protocol: /^https?$/ }).max(2_000);

export const Company = z
  .object({
    id: Uuid,
    name: z.string(),
    domain: z.string().nullable(),
    industry: z.string().nullable(),
    size: z.enum(COMPANY_SIZES).nullable(),
    website: z.string().meta({ format: 'uri' }).nullable(),
    created_at: DateTimeOut,
    updated_at: DateTimeOut.nullable(),
    custom: CustomValues,
  })
  .meta({ id: 'Company' });
export type CompanyDto = z.infer<typeof Company>;

const written = {
  domain: Domain,
  industry: ShortText,
  size: z.enum(COMPANY_SIZES),
  website: Website,
};

export const CompanyCreateInput = z
  .strictObject({
    name: Name,
    ...z.object(written).partial().shape,
    custom: CustomValuesInput.optional(),
  })
  .meta({
    id: 'CompanyCreateRequest',
    examples: [
      {
        name: 'Acme Corp',
        domain: 'acme.com',
        industry: 'Manufacturing',
        size: '201-500',
        website: 'https://acme.com',
      },
    ],
  });
export type CompanyCreateInput = z.infer<typeof CompanyCreateInput>;

export const CompanyUpdateInput = z
  .strictObject({
    name: Name.optional(),
    domain: Domain.nullable().optional(),
    industry: ShortText.nullable().optional(),
    size: z.enum(COMPANY_SIZES).nullable().optional(),
    website: Website.nullable().optional(),
    custom: CustomValuesInput.optional(),
  })
  .meta({
    id: 'CompanyUpdateRequest',
    examples: [{ industry: 'Industrial automation', size: '501-1000' }],
  });
export type CompanyUpdateInput = z.infer<typeof CompanyUpdateInput>;

const CompanyQ = Text().trim().min(1).max(200).describe('Case-insensitive substring of name or domain');

export const CompanyListQuery = z
  .strictObject({
    ...Pagination,
    after: SyncAfter,
    q: CompanyQ.optional(),
    filter: FilterParam.optional(),
    sort: SortParam.optional(),
    view: ViewParam.optional(),
    ...SyncParams,
  })
  .superRefine(checkSyncInput);
export type CompanyListQuery = z.infer<typeof CompanyListQuery>;

/** The body of POST /companies/query: GET /companies's parameters, the filter as a JSON object. */
export const CompanyQueryBody = z
  .strictObject({
    ...Pagination,
    after: SyncAfter,
    q: CompanyQ.optional(),
    filter: FilterBody.optional(),
    sort: SortParam.optional(),
    view: ViewParam.optional(),
    ...SyncParams,
  })
  .superRefine(checkSyncInput)
  .meta({
    id: 'CompanyQueryRequest',
    examples: [{ filter: { field: 'size', op: 'in', value: ['201-500', '501-1000'] }, sort: 'name' }],
  });
export type CompanyQueryBody = z.infer<typeof CompanyQueryBody>;

export const CompanyList = z.object({
  data: z.array(Company),
  meta: CursorPaginationMeta.extend({ ...SyncMetaFields, total_exact: SyncTotalExact }),
  deleted: SyncDeleted,
});

/** How many of its newest deals and contacts a company's detail shows. */
export const COMPANY_DETAIL_NEWEST = 5;

export const CompanyDetail = z
  .object({
    data: Company.extend({
      counts: z.object({
        deals: z.number().int().min(0),
        open_deals: z.number().int().min(0),
        contacts: z.number().int().min(0),
      }),
      deals: z
        .array(
          z.object({
            id: Uuid,
            title: z.string(),
            value: z.number().nullable(),
            currency: z.string().nullable(),
            stage_name: z.string().nullable(),
            stage_type: z.string().nullable(),
            created_at: DateTimeOut,
          }),
        )
        .describe(`The newest ${COMPANY_DETAIL_NEWEST} deals linked to it`),
      contacts: z
        .array(
          z.object({
            id: Uuid,
            name: z.string(),
            email: z.string().meta({ format: 'email' }).nullable(),
            title: z.string().nullable(),
            created_at: DateTimeOut,
          }),
        )
        .describe(`The newest ${COMPANY_DETAIL_NEWEST} contacts linked to it`),
    }),
  })
  .meta({ id: 'CompanyDetailResponse' });
