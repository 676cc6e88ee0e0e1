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
  DateTime,
  DateTimeOut,
  LongText,
  Pagination,
  ShortText,
  Text,
  Uuid,
} from '../../schemas.ts';
import { CustomValues, CustomValuesInput } from '../custom-fields/custom-field.schemas.ts';

/** The lifecycle_stage values pipeline stages imply, unless a client set one itself (docs/api/deals.md, "Lifecycle"). */
export const LIFECYCLE_STAGES = ['lead', 'opportunity', 'customer', 'lost'] as const;
/** Free text in the contract: a client's own value (`evaluation`, `churn_risk`) is stored as given, trimmed. */
export const LifecycleStage = Text()
  .trim()
  .min(1, 'must not be empty')
  .max(64)
  .describe('Free text; lead, opportunity, customer and lost follow the stage unless a value is set');

const Title = Text().trim().min(1).max(500);
/**
 * Stored as numeric(18,2): more decimals would come back rounded, so they are refused instead. The test is
 * on the decimal the number reads as (the nearest double to its two-decimal rounding is itself), not on
 * `v * 100`, whose binary error refused about one amount in ten above 10^8 (2614969103.80).
 */
const Money = z
  .number()
  .min(0)
  .max(1e15)
  .refine((v) => Number(v.toFixed(2)) === v, 'at most 2 decimal places');
const Currency = z
  .string()
  .regex(/^[A-Za-z]{3}$/, 'must be a three-letter ISO 4217 code')
  .transform((c) => c.toUpperCase());

/**
 * An e-mail address as stored. Inputs validate it (`z.email()`); outputs only say its format, so a value
 * stored before a rule changed is still answered rather than failing the read.
 */
const EmailOut = z.string().meta({ format: 'email' });

/** Each field of `shape` optional and nullable: what a PATCH takes (left out: unchanged; null: cleared). */
function nullableOptional<T extends Record<string, z.ZodType>>(shape: T) {
  return Object.fromEntries(
    Object.entries(shape).map(([key, schema]) => [key, schema.nullable().optional()]),
  ) as {
    [K in keyof T]: z.ZodOptional<z.ZodNullable<T[K]>>;
  };
}

export const Deal = z
  .object({
    id: Uuid,
    title: z.string(),
    company_name: z.string().nullable(),
    company_id: Uuid.nullable().describe('The linked company (GET /companies/{id}); null when none'),
    value: z.number().nullable(),
    currency: z.string().nullable(),
    win_probability: z.number().int().min(0).max(100).nullable(),
    deal_health: z.string().nullable(),
    lifecycle_stage: z.string().nullable(),
    stage_id: Uuid.nullable(),
    stage_name: z.string().nullable(),
    stage_type: z.string().nullable(),
    pipeline_id: Uuid.nullable(),
    pipeline_name: z.string().nullable(),
    owner_name: z.string().nullable(),
    contact_name: z.string().nullable(),
    contact_email: EmailOut.nullable(),
    contact_phone: z.string().nullable(),
    notes: z.string().nullable(),
    lead_source: z.string().nullable(),
    expected_close_date: DateTimeOut.nullable(),
    last_activity_at: DateTimeOut.nullable(),
    created_at: DateTimeOut,
    updated_at: DateTimeOut.nullable(),
    custom: CustomValues,
  })
  .meta({ id: 'Deal' });
export type DealDto = z.infer<typeof Deal>;

/**
 * The fields a client writes, in the order the document lists them: a create takes each (title
 * required), a PATCH each again, nullable to clear it, with the fields only a change sets.
 */
const WrittenDealFields = {
  title: Title,
  company_name: ShortText,
  value: Money,
  currency: Currency,
  contact_name: ShortText,
  contact_email: z.email(),
  contact_phone: ShortText,
  notes: LongText,
  lead_source: ShortText,
  expected_close_date: DateTime,
};
const { title: _title, contact_phone: _phone, ...createdOptional } = WrittenDealFields;
const { title: _updatedTitle, ...clearable } = WrittenDealFields;

export const DealCreateInput = z
  .strictObject({
    title: Title,
    ...z.object(createdOptional).partial().shape,
    company_id: Uuid.optional().describe(
      'Links the deal to a company; without a company_name of its own the deal shows the company’s name',
    ),
    pipeline_id: Uuid.optional(),
    stage_id: Uuid.optional(),
    custom: CustomValuesInput.optional(),
  })
  .meta({
    id: 'DealCreateRequest',
    examples: [
      {
        title: 'Acme rollout',
        company_name: 'Acme Corp',
        value: 12000,
        currency: 'USD',
        contact_name: 'Jane Doe',
        contact_email: 'jane.doe@example.com',
        notes: 'Wants SSO before signing; budget approved for Q1.',
        lead_source: 'Website',
        expected_close_date: '2026-12-15T17:00:00Z',
      },
    ],
  });
export type DealCreateInput = z.infer<typeof DealCreateInput>;

export const DealUpdateInput = z
  .strictObject({
    title: Title.optional(),
    ...nullableOptional(clearable),
    company_id: Uuid.nullable()
      .optional()
      .describe('Links the deal to a company (null unlinks it; the deal keeps its company_name)'),
    pipeline_id: Uuid.optional(),
    stage_id: Uuid.optional(),
    lifecycle_stage: LifecycleStage.nullable()
      .optional()
      .describe('Set to pin the value; null returns it to following the stage'),
    description: LongText.nullable().optional(),
    custom: CustomValuesInput.optional(),
  })
  .meta({
    id: 'DealUpdateRequest',
    // The body of PATCH /deals/{id}: the router adds the path's id, which drops this meta, and repeats it.
    examples: [
      {
        value: 15000,
        expected_close_date: '2027-01-29T17:00:00Z',
        notes: 'Legal review started; security questionnaire sent.',
      },
    ],
  });
export type DealUpdateInput = z.infer<typeof DealUpdateInput>;

export const DealListQuery = z
  .strictObject({
    ...Pagination,
    after: SyncAfter,
    lifecycle_stage: LifecycleStage.optional(),
    pipeline_id: Uuid.optional(),
    filter: FilterParam.optional(),
    sort: SortParam.optional(),
    view: ViewParam.optional(),
    ...SyncParams,
  })
  .superRefine(checkSyncInput);
export type DealListQuery = z.infer<typeof DealListQuery>;

/** The body of POST /deals/query: GET /deals's parameters, the filter as a JSON object (no length limit of a URL). */
export const DealQueryBody = z
  .strictObject({
    ...Pagination,
    after: SyncAfter,
    lifecycle_stage: LifecycleStage.optional(),
    pipeline_id: Uuid.optional(),
    filter: FilterBody.optional(),
    sort: SortParam.optional(),
    view: ViewParam.optional(),
    ...SyncParams,
  })
  .superRefine(checkSyncInput)
  .meta({
    id: 'DealQueryRequest',
    examples: [
      {
        filter: {
          and: [
            { field: 'value', op: 'gte', value: 10000 },
            { field: 'stage_type', op: 'eq', value: 'open' },
          ],
        },
        sort: '-value,created_at',
        limit: 20,
      },
    ],
  });
export type DealQueryBody = z.infer<typeof DealQueryBody>;

export const DealList = z.object({
  data: z.array(Deal),
  meta: CursorPaginationMeta.extend({ ...SyncMetaFields, total_exact: SyncTotalExact }),
  deleted: SyncDeleted,
});

export const Stakeholder = z
  .object({
    id: Uuid,
    name: z.string(),
    email: EmailOut.nullable(),
    title: z.string().nullable(),
    role_type: z.string().nullable(),
    influence_level: z.string().nullable(),
    engagement_level: z.string().nullable(),
    sentiment: z.string().nullable(),
  })
  .meta({ id: 'Stakeholder' });

export const Activity = z
  .object({
    id: Uuid,
    type: z.string().nullable(),
    description: z.string().nullable(),
    created_at: DateTimeOut.nullable(),
  })
  .meta({ id: 'Activity' });

export const DealDetail = z
  .object({
    data: z.object({ deal: Deal, stakeholders: z.array(Stakeholder), recent_activities: z.array(Activity) }),
  })
  .meta({ id: 'DealDetailResponse' });
