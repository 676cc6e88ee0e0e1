import { ENGAGEMENT_LEVELS, INFLUENCE_LEVELS, ROLE_TYPES, SENTIMENTS } from '@crm/db';
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
import {
  CursorPaginationMeta,
  DateTimeOut,
  LongText,
  Pagination,
  ShortText,
  Text,
  Uuid,
} from '../../schemas.ts';
import { CustomValues, CustomValuesInput } from '../custom-fields/custom-field.schemas.ts';

export const RoleType = z.enum(ROLE_TYPES);
export const InfluenceLevel = z.enum(INFLUENCE_LEVELS);
export const EngagementLevel = z.enum(ENGAGEMENT_LEVELS);
export const Sentiment = z.enum(SENTIMENTS);

const Name = Text().trim().min(1).max(500);

/** Formats of stored values: documented, not checked again on the way out (inputs validate them). */
const EmailOut = z.string().meta({ format: 'email' });
const UrlOut = z.string().meta({ format: 'uri' });

export const Contact = z
  .object({
    id: Uuid,
    name: z.string(),
    email: EmailOut.nullable(),
    title: z.string().nullable(),
    phone: z.string().nullable(),
    deal_id: Uuid,
    company_id: Uuid.nullable().describe(
      'The company the person works for (GET /companies/{id}); null when none',
    ),
    role_type: RoleType,
    department: z.string().nullable(),
    influence_level: InfluenceLevel.nullable(),
    engagement_level: EngagementLevel.nullable(),
    sentiment: Sentiment.nullable(),
    linkedin_url: UrlOut.nullable(),
    notes: z.string().nullable(),
    created_at: DateTimeOut,
    updated_at: DateTimeOut.nullable(),
    custom: CustomValues,
  })
  .meta({ id: 'Contact' });
export type ContactDto = z.infer<typeof Contact>;

export const ContactDetail = z
  .object({
    data: Contact.extend({
      deal: z.object({ title: z.string().nullable(), company: z.string().nullable() }),
    }),
  })
  .meta({ id: 'ContactDetailResponse' });

export const ContactCreateInput = z
  .strictObject({
    name: Name,
    deal_id: Uuid,
    email: z.email().optional(),
    title: ShortText.optional(),
    phone: ShortText.optional(),
    role_type: RoleType.default('unknown'),
    company_id: Uuid.optional().describe(
      'The company the person works for; the deal’s company when left out',
    ),
    custom: CustomValuesInput.optional(),
  })
  .meta({
    id: 'ContactCreateRequest',
    examples: [
      {
        name: 'Jane Doe',
        deal_id: '0195f3a2-7c1e-7b3a-9f10-2d4e6a8c0b12',
        email: 'jane.doe@example.com',
        title: 'VP Engineering',
        phone: '+1 415 555 0100',
        role_type: 'champion',
      },
    ],
  });
export type ContactCreateInput = z.infer<typeof ContactCreateInput>;

export const ContactUpdateInput = z
  .strictObject({
    name: Name.optional(),
    email: z.email().nullable().optional(),
    title: ShortText.nullable().optional(),
    phone: ShortText.nullable().optional(),
    department: ShortText.nullable().optional(),
    notes: LongText.nullable().optional(),
    role_type: RoleType.nullable().optional().describe('null resets it to unknown'),
    influence_level: InfluenceLevel.nullable().optional(),
    engagement_level: EngagementLevel.nullable().optional(),
    sentiment: Sentiment.nullable().optional(),
    linkedin_url: z
      .url({ protocol: /^https?$/ })
      .max(2_000)
      .nullable()
      .optional(),
    company_id: Uuid.nullable().optional().describe('The company the person works for; null unlinks it'),
    custom: CustomValuesInput.optional(),
  })
  .meta({
    id: 'ContactUpdateRequest',
    // The body of PATCH /contacts/{id}: the router adds the path's id, which drops this meta, and repeats it.
    examples: [
      {
        title: 'CTO',
        influence_level: 'high',
        engagement_level: 'high',
        sentiment: 'positive',
        linkedin_url: 'https://www.linkedin.com/in/janedoe',
      },
    ],
  });
export type ContactUpdateInput = z.infer<typeof ContactUpdateInput>;

const ContactQ = Text().trim().min(1).max(200).describe('Case-insensitive substring of name, email or title');

export const ContactListQuery = z
  .strictObject({
    ...Pagination,
    after: SyncAfter,
    q: ContactQ.optional(),
    filter: FilterParam.optional(),
    sort: SortParam.optional(),
    view: ViewParam.optional(),
    ...SyncParams,
  })
  .superRefine(checkSyncInput);
export type ContactListQuery = z.infer<typeof ContactListQuery>;

/** The body of POST /contacts/query: GET /contacts's parameters, the filter as a JSON object. */
export const ContactQueryBody = z
  .strictObject({
    ...Pagination,
    after: SyncAfter,
    q: ContactQ.optional(),
    filter: FilterBody.optional(),
    sort: SortParam.optional(),
    view: ViewParam.optional(),
    ...SyncParams,
  })
  .superRefine(checkSyncInput)
  .meta({
    id: 'ContactQueryRequest',
    examples: [
      {
        filter: {
          and: [
            { field: 'role_type', op: 'in', value: ['economic_buyer', 'champion'] },
            { field: 'deal.stage_type', op: 'eq', value: 'open' },
          ],
        },
        sort: 'name',
      },
    ],
  });
export type ContactQueryBody = z.infer<typeof ContactQueryBody>;

export const ContactList = z.object({
  data: z.array(Contact),
  meta: CursorPaginationMeta.extend({ ...SyncMetaFields, total_exact: SyncTotalExact }),
  deleted: SyncDeleted,
});
