import { z } from 'zod';
import { Text, Uuid } from '../../schemas.ts';
import { CustomValues } from '../custom-fields/custom-field.schemas.ts';

export const SearchQuery = z.strictObject({
  q: Text()
    .trim()
    .min(2)
    .max(200)
    .describe('At least 2 characters; case-insensitive: equal, then beginning, then anywhere in a value'),
});

export const SearchDeal = z
  .object({
    id: Uuid,
    title: z.string(),
    company_name: z.string().nullable(),
    stage: z.string().nullable(),
    value: z.number().nullable(),
    health: z.string().nullable(),
    win_probability: z.number().int().min(0).max(100).nullable(),
    custom: CustomValues,
  })
  .meta({ id: 'SearchDeal' });

/** A stored e-mail address: its format is documented, not checked again on the way out. */
const EmailOut = z.string().meta({ format: 'email' });

export const SearchContact = z
  .object({
    id: Uuid,
    name: z.string(),
    email: EmailOut.nullable(),
    title: z.string().nullable(),
    role_type: z.string().nullable(),
    deal_id: Uuid.nullable(),
    deal_title: z.string().nullable(),
    company: z.string().nullable(),
    custom: CustomValues,
  })
  .meta({ id: 'SearchContact' });

export const SearchCompany = z
  .object({
    id: Uuid,
    name: z.string(),
    domain: z.string().nullable(),
    industry: z.string().nullable(),
    custom: CustomValues,
  })
  .meta({ id: 'SearchCompany' });

export const SearchResponse = z
  .object({
    deals: z.array(SearchDeal).optional(),
    contacts: z.array(SearchContact).optional(),
    companies: z
      .array(SearchCompany)
      .optional()
      .describe('Up to 20 companies whose name or domain contains q, best first; left out when none matched'),
  })
  .meta({ id: 'SearchResponse' });

/** How many rows of one list matched: exact up to the bound, else "more than" `total`. */
export const SearchMatched = z
  .object({
    total: z.number().int().min(0).describe('How many matched; when `exact` is false, more than this many'),
    exact: z.boolean().describe('false when more than `total` (the count bound) matched'),
  })
  .meta({ id: 'SearchMatched' });

export const SearchMeta = z
  .object({
    deals: SearchMatched,
    contacts: SearchMatched,
    companies: SearchMatched.optional().describe('Present when a company matched'),
    count_bound: z.number().int().min(1).describe('Matches are counted exactly up to this many'),
  })
  .meta({ id: 'SearchMeta' });

export const SearchResult = z.object({ data: SearchResponse, meta: SearchMeta });
