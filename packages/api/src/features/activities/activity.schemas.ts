import { ENGAGEMENT_TYPES, LINK_TARGETS, TASK_STATUSES } from '@crm/db';
import { z } from 'zod';
import { FilterBody, FilterParam, SortParam, ViewParam } from '../../query/schemas.ts';
import {
  checkSyncInput,
  SyncAfter,
  SyncDeleted,
  SyncMetaFields,
  SyncParams,
} from '../../query/sync-schemas.ts';
import { DateTime, DateTimeOut, queryInteger, Text, Uuid } from '../../schemas.ts';

/** The largest `body`, in bytes of UTF-8: a long meeting's notes, not an attachment. */
export const MAX_ACTIVITY_BODY_BYTES = 64 * 1024;
/** How many records one activity may be linked to (and how many participants it may have). */
export const MAX_ACTIVITY_LINKS = 50;

const Subject = Text().trim().min(1).max(500);
const Body = Text()
  .refine((v) => Buffer.byteLength(v, 'utf8') <= MAX_ACTIVITY_BODY_BYTES, {
    message: `must be at most 64 KB (${MAX_ACTIVITY_BODY_BYTES.toLocaleString('en')} bytes of UTF-8)`,
  })
  .describe('Markdown, at most 64 KB');

export const ActivityLink = z
  .strictObject({ type: z.enum(LINK_TARGETS), id: Uuid })
  .meta({ id: 'ActivityLink', description: 'A deal, contact or company of the organization' });

const Links = z
  .array(ActivityLink)
  .min(1, 'link the activity to at least one deal, contact or company')
  .max(MAX_ACTIVITY_LINKS, `at most ${MAX_ACTIVITY_LINKS} links`);
const Participants = z
  .array(Uuid)
  .max(MAX_ACTIVITY_LINKS, `at most ${MAX_ACTIVITY_LINKS} participants`)
  .describe('Contacts who took part: each is linked to the activity too');

export const LoggedActivity = z
  .object({
    id: Uuid,
    type: z.enum(ENGAGEMENT_TYPES),
    subject: z.string(),
    body: z.string().nullable(),
    occurred_at: DateTimeOut.describe('When it happened; a task’s creation time'),
    due_at: DateTimeOut.nullable().describe('Tasks: when it is due'),
    status: z.enum(TASK_STATUSES).nullable().describe('Tasks: open or done; null for the other types'),
    completed_at: DateTimeOut.nullable().describe('Tasks: when it was marked done'),
    participants: z.array(Uuid),
    links: z.array(z.object({ type: z.enum(LINK_TARGETS), id: Uuid })),
    created_at: DateTimeOut,
    updated_at: DateTimeOut.nullable(),
  })
  .meta({ id: 'LoggedActivity' });
export type LoggedActivityDto = z.infer<typeof LoggedActivity>;

/** What only a task has: named in the 400 when another type is sent with it. */
const TASK_FIELDS = ['due_at', 'status'] as const;

/** The create's and update's rule: task fields on a task only, `occurred_at` on the others only. */
function taskFieldsFit(
  type: string | undefined,
  input: Record<string, unknown>,
  ctx: z.core.$RefinementCtx<unknown>,
): void {
  if (type === undefined) return;
  if (type === 'task') {
    if (input.occurred_at !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['occurred_at'],
        message: 'a task has no occurred_at (its time is its creation); give due_at',
      });
    return;
  }
  for (const field of TASK_FIELDS)
    if (input[field] !== undefined && input[field] !== null)
      ctx.addIssue({ code: 'custom', path: [field], message: `only a task has ${field} (type is ${type})` });
}

export const ActivityCreateInput = z
  .strictObject({
    type: z.enum(ENGAGEMENT_TYPES),
    subject: Subject,
    body: Body.optional(),
    occurred_at: DateTime.optional().describe('When it happened (default: now); not for a task'),
    due_at: DateTime.optional().describe('Tasks only: when it is due'),
    status: z.enum(TASK_STATUSES).optional().describe('Tasks only: open (default) or done'),
    participants: Participants.optional(),
    links: Links,
  })
  .superRefine((input, ctx) => taskFieldsFit(input.type, input, ctx))
  .meta({
    id: 'ActivityCreateRequest',
    examples: [
      {
        type: 'call',
        subject: 'Discovery call',
        body: 'Budget approved for Q3; **security review** next.',
        occurred_at: '2026-11-20T15:00:00Z',
        participants: ['019a0000-0000-7000-8000-000000000011'],
        links: [
          { type: 'deal', id: '019a0000-0000-7000-8000-000000000001' },
          { type: 'contact', id: '019a0000-0000-7000-8000-000000000011' },
          { type: 'contact', id: '019a0000-0000-7000-8000-000000000012' },
        ],
      },
    ],
  });
export type ActivityCreateInput = z.infer<typeof ActivityCreateInput>;

export const ActivityUpdateInput = z
  .strictObject({
    id: Uuid.describe('Resource id (uuid)'),
    subject: Subject.optional(),
    body: Body.nullable().optional(),
    occurred_at: DateTime.optional().describe('Not for a task'),
    due_at: DateTime.nullable().optional().describe('Tasks only'),
    status: z
      .enum(TASK_STATUSES)
      .optional()
      .describe('Tasks only: done records completed_at, open clears it'),
    participants: Participants.optional().describe('Replaces the participants (each is linked too)'),
    links: Links.optional().describe('Replaces the links (participants stay linked)'),
  })
  .meta({
    id: 'ActivityUpdateRequest',
    examples: [{ status: 'done' }],
  });
export type ActivityUpdateInput = z.infer<typeof ActivityUpdateInput>;
export { taskFieldsFit };

const ActivityListParams = {
  limit: queryInteger(z.number().min(1).max(100), 50).describe('Page size, 1..100'),
  after: SyncAfter,
  deal_id: Uuid.optional().describe('Only activities linked to this deal'),
  contact_id: Uuid.optional().describe('Only activities linked to this contact'),
  company_id: Uuid.optional().describe('Only activities linked to this company'),
  type: z.enum(ENGAGEMENT_TYPES).optional(),
  status: z.enum(TASK_STATUSES).optional().describe('Only tasks with this status'),
  due_before: DateTime.optional().describe('Only tasks due before this time'),
  sort: SortParam.optional().describe(
    'Comma-separated fields, `-` for descending (`due_at`, `-occurred_at`); empty values last, the id breaks ties. Newest first (`-occurred_at`) when left out',
  ),
  view: ViewParam.optional(),
  ...SyncParams,
};

export const ActivityListQuery = z
  .strictObject({ ...ActivityListParams, filter: FilterParam.optional() })
  .superRefine(checkSyncInput);
export type ActivityListQuery = z.infer<typeof ActivityListQuery>;

/** The body of POST /activities/query: GET /activities's parameters, the filter as a JSON object. */
export const ActivityQueryBody = z
  .strictObject({ ...ActivityListParams, filter: FilterBody.optional() })
  .superRefine(checkSyncInput)
  .meta({
    id: 'ActivityQueryRequest',
    examples: [
      {
        filter: {
          and: [
            { field: 'type', op: 'eq', value: 'task' },
            { field: 'status', op: 'eq', value: 'open' },
            { field: 'due_at', op: 'lt', value: '2026-12-01T00:00:00Z' },
          ],
        },
        sort: 'due_at',
        limit: 20,
      },
    ],
  });
export type ActivityQueryBody = z.infer<typeof ActivityQueryBody>;

export const ActivityList = z.object({
  data: z.array(LoggedActivity),
  meta: z.object({ limit: z.number().int().min(1), ...SyncMetaFields }),
  deleted: SyncDeleted,
});

/** One entry of a deal's timeline: what `kind` it is, its own id, and when (`at`). */
const entry = <K extends string, T extends z.ZodRawShape>(kind: K, shape: T) =>
  z.object({ kind: z.literal(kind), id: Uuid, at: DateTimeOut, ...shape });

const Changes = z.record(z.string(), z.object({ from: z.unknown(), to: z.unknown() }));

export const TimelineEntry = z
  .discriminatedUnion('kind', [
    entry('activity', { activity: LoggedActivity }),
    entry('stage_change', { description: z.string().nullable(), changes: Changes }),
    entry('field_change', { description: z.string().nullable(), changes: Changes }),
    entry('analysis', {
      analysis: z.object({
        win_probability: z.number().int().nullable(),
        total_score: z.number().nullable(),
        score_band: z.string().nullable(),
        deal_health: z.string().nullable(),
        summary: z.string().nullable(),
      }),
    }),
  ])
  .meta({ id: 'TimelineEntry' });
export type TimelineEntryDto = z.infer<typeof TimelineEntry>;

export const TimelineQuery = z.strictObject({
  id: Uuid.describe('Resource id (uuid)'),
  limit: queryInteger(z.number().min(1).max(100), 50).describe('Page size, 1..100'),
  after: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,200}$/, 'must be a cursor from meta.next_cursor')
    .optional()
    .describe('Continue after this cursor (the previous page’s `meta.next_cursor`)'),
});
export type TimelineQuery = z.infer<typeof TimelineQuery>;

export const Timeline = z.object({
  data: z.array(TimelineEntry),
  meta: z.object({
    limit: z.number().int().min(1),
    next_cursor: z.string().nullable().describe('Pass as `after` for the next page; null on the last page'),
  }),
});
