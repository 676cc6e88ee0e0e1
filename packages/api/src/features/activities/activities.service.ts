import { type EntityManager, type FieldChanges, type LinkTarget, sqlOf, type Tables, uuidv7 } from '@crm/db';
import { type Expression, type ExpressionBuilder, expressionBuilder, type SqlBool, sql } from 'kysely';
import { changeValue, sameValue } from '../../activities.ts';
import type { AuthedContext } from '../../context.ts';
import { ApiError, notFound } from '../../errors.ts';
import { emitEvent } from '../../events.ts';
import { orgDb, orgQuery } from '../../org-scope.ts';
import { type SyncedObject, syncAnswer, syncList } from '../../query/sync.ts';
import { asJson, isoOf } from '../../read-model.ts';
import type {
  ActivityCreateInput,
  ActivityListQuery,
  ActivityUpdateInput,
  LoggedActivityDto,
} from './activity.schemas.ts';

/** The table each link type names. */
const TARGET_TABLES = { deal: 'deals', contact: 'contacts', company: 'companies' } as const;
/** Links in their answer's order: deals, then contacts, then companies (each by id). */
const LINK_ORDER = sql.lit('{deal,contact,company}');

/** An activity's columns as the API answers them, its links and participants aggregated (as `e`). */
// biome-ignore lint/suspicious/noExplicitAny: the builders of several queries pass through here
export const activityColumns = (eb: ExpressionBuilder<any, any>) =>
  [
    'e.id',
    'e.type',
    'e.subject',
    'e.body',
    isoOf('e.occurred_at').as('occurred_at'),
    isoOf('e.due_at').as('due_at'),
    'e.status',
    isoOf('e.completed_at').as('completed_at'),
    isoOf('e.created_at').as('created_at'),
    isoOf('e.updated_at').as('updated_at'),
    eb
      .selectFrom('engagement_links as l')
      .select(
        sql<unknown>`coalesce(json_agg(json_build_object('type', l.target_type, 'id', l.target_id) order by array_position(${LINK_ORDER}::text[], l.target_type), l.target_id), '[]'::json)`.as(
          'list',
        ),
      )
      .whereRef('l.engagement_id', '=', 'e.id')
      .as('links'),
    eb
      .selectFrom('engagement_links as l')
      .select(sql<unknown>`coalesce(json_agg(l.target_id order by l.target_id), '[]'::json)`.as('list'))
      .whereRef('l.engagement_id', '=', 'e.id')
      .where('l.participant', '=', sql.lit(true))
      .as('participants'),
  ] as const;

/** The one mapping from a stored activity (its columns as activityColumns reads them) to the API's. */
export function toActivityDto(row: Record<string, unknown>): LoggedActivityDto {
  return {
    id: row.id as string,
    type: row.type as LoggedActivityDto['type'],
    subject: row.subject as string,
    body: (row.body as string | null) ?? null,
    occurred_at: row.occurred_at as string,
    due_at: (row.due_at as string | null) ?? null,
    status: (row.status as LoggedActivityDto['status']) ?? null,
    completed_at: (row.completed_at as string | null) ?? null,
    participants: asJson<string[]>(row.participants ?? '[]'),
    links: asJson<LoggedActivityDto['links']>(row.links ?? '[]'),
    created_at: row.created_at as string,
    updated_at: (row.updated_at as string | null) ?? null,
  };
}

const oneActivity = orgQuery(
  (db, a: { id: string }) =>
    db
      .selectFrom('engagements as e')
      .select((eb) => activityColumns(eb))
      .where('e.id', '=', a.id),
  { reusePlan: true },
);

/** The activity as the API shows it (in the caller's transaction), or a 404. */
export async function activityDto(em: EntityManager, id: string): Promise<LoggedActivityDto> {
  const [row] = await oneActivity(em, { id });
  if (!row) throw notFound('Activity');
  return toActivityDto(row);
}

const existing = {
  deal: orgQuery((db, a: { ids: string[] }) =>
    db.selectFrom('deals').select('id').where(sql<boolean>`id = any(${a.ids}::uuid[])`),
  ),
  contact: orgQuery((db, a: { ids: string[] }) =>
    db.selectFrom('contacts').select('id').where(sql<boolean>`id = any(${a.ids}::uuid[])`),
  ),
  company: orgQuery((db, a: { ids: string[] }) =>
    db.selectFrom('companies').select('id').where(sql<boolean>`id = any(${a.ids}::uuid[])`),
  ),
};

interface LinkRow {
  type: LinkTarget;
  id: string;
  participant: boolean;
}

/**
 * The rows an activity's links and participants make, each record once (a participant is linked too), after
 * checking that each is a record of the organization: the first that is not is a 404 naming its field
 * (`links[2].id: no deal with this id`), another organization's alike.
 */
async function checkedLinks(
  em: EntityManager,
  links: ReadonlyArray<{ type: LinkTarget; id: string }>,
  participants: readonly string[],
): Promise<LinkRow[]> {
  const named: Array<{ field: string; type: LinkTarget; id: string }> = [
    ...links.map((l, i) => ({ field: `links[${i}].id`, type: l.type, id: l.id })),
    ...participants.map((id, i) => ({ field: `participants[${i}]`, type: 'contact' as const, id })),
  ];
  const found = new Set<string>();
  await Promise.all(
    (Object.keys(TARGET_TABLES) as LinkTarget[]).map(async (type) => {
      const ids = [...new Set(named.filter((n) => n.type === type).map((n) => n.id))];
      if (ids.length === 0) return;
      for (const row of await existing[type](em, { ids })) found.add(`${type}:${row.id}`);
    }),
  );
  const missing = named.find((n) => !found.has(`${n.type}:${n.id}`));
  if (missing) throw new ApiError('not_found', `${missing.field}: no ${missing.type} with this id`);
  const rows = new Map<string, LinkRow>();
  for (const l of links) {
    const seen = rows.get(l.id);
    if (seen && seen.type !== l.type)
      throw new ApiError('invalid_request', `links: ${l.id} is given as a ${seen.type} and as a ${l.type}`);
    rows.set(l.id, { type: l.type, id: l.id, participant: false });
  }
  for (const id of participants) rows.set(id, { type: 'contact', id, participant: true });
  return [...rows.values()];
}

async function insertLinks(
  em: EntityManager,
  orgId: string,
  engagementId: string,
  occurredAt: Date,
  rows: readonly LinkRow[],
): Promise<void> {
  if (rows.length === 0) return;
  await sqlOf(em)
    .insertInto('engagement_links')
    .values(
      rows.map((r) => ({
        engagement_id: engagementId,
        org_id: orgId,
        target_type: r.type,
        target_id: r.id,
        participant: r.participant,
        occurred_at: occurredAt,
      })),
    )
    .execute();
}

/**
 * When an activity moves its deals' `last_activity_at`: a task when it is done (at completion), any other
 * once it has happened (a meeting planned for next week does not, yet). Undefined: it does not.
 */
function activityClock(
  e: { type: string; occurred_at: Date; completed_at: Date | null },
  now: Date,
): Date | undefined {
  const at = e.type === 'task' ? e.completed_at : e.occurred_at;
  return at && at.getTime() <= now.getTime() ? at : undefined;
}

/** Moves the linked deals' `last_activity_at` to `at` where it is earlier (a clock that never goes back). */
async function touchDeals(
  em: EntityManager,
  dealIds: readonly string[],
  at: Date | undefined,
): Promise<void> {
  if (!at || dealIds.length === 0) return;
  await orgDb(em)
    .updateTable('deals')
    .set({ last_activity_at: at })
    .where(sql<boolean>`id = any(${[...dealIds]}::uuid[])`)
    .where((eb) => eb.or([eb('last_activity_at', 'is', null), eb('last_activity_at', '<', at)]))
    .execute();
}

/** Creates an activity with its links and emits `activity.created`, in the caller's transaction. */
export async function createActivity(
  ctx: AuthedContext,
  em: EntityManager,
  input: ActivityCreateInput,
): Promise<LoggedActivityDto> {
  const links = await checkedLinks(em, input.links, input.participants ?? []);
  const now = new Date();
  const isTask = input.type === 'task';
  const status = isTask ? (input.status ?? 'open') : null;
  const row = {
    id: uuidv7(),
    org_id: ctx.principal.orgId,
    type: input.type,
    subject: input.subject,
    body: input.body ?? null,
    occurred_at: isTask || !input.occurred_at ? now : new Date(input.occurred_at),
    due_at: isTask && input.due_at ? new Date(input.due_at) : null,
    status,
    completed_at: status === 'done' ? now : null,
    created_at: now,
  };
  await sqlOf(em).insertInto('engagements').values(row).execute();
  await insertLinks(em, ctx.principal.orgId, row.id, row.occurred_at, links);
  await touchDeals(
    em,
    links.filter((l) => l.type === 'deal').map((l) => l.id),
    activityClock(row, now),
  );
  const activity = await activityDto(em, row.id);
  await emitEvent(em, { type: 'activity.created', data: activity });
  return activity;
}

const TASK_ONLY = ['due_at', 'status'] as const;

const dateOf = (v: unknown): Date | null =>
  v == null ? null : v instanceof Date ? v : new Date(v as string);

/**
 * A PATCH of an activity in the caller's transaction: the fields sent, links and participants replaced when
 * sent, `activity.updated` with what changed; the linked deals' `last_activity_at` moves as a create's does.
 */
export async function updateActivity(
  ctx: AuthedContext,
  em: EntityManager,
  id: string,
  input: Omit<ActivityUpdateInput, 'id'>,
): Promise<LoggedActivityDto> {
  const row = await orgDb(em)
    .selectFrom('engagements')
    .selectAll()
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
  if (!row) throw notFound('Activity');
  // The driver may hand timestamps back as text: compared and logged as instants.
  const current = {
    ...row,
    occurred_at: dateOf(row.occurred_at) as Date,
    due_at: dateOf(row.due_at),
    completed_at: dateOf(row.completed_at),
  };
  const isTask = current.type === 'task';
  if (isTask && input.occurred_at !== undefined)
    throw new ApiError(
      'invalid_request',
      'occurred_at: a task has no occurred_at (its time is its creation); give due_at',
    );
  if (!isTask)
    for (const field of TASK_ONLY)
      if (input[field] !== undefined && input[field] !== null)
        throw new ApiError('invalid_request', `${field}: only a task has ${field} (type is ${current.type})`);

  const changes: FieldChanges = {};
  const set: Record<string, unknown> = {};
  const change = (field: string, from: unknown, to: unknown) => {
    if (to === undefined || sameValue(from, to)) return;
    changes[field] = { from: changeValue(from), to: changeValue(to) };
    set[field] = to;
  };
  const now = new Date();
  change('subject', current.subject, input.subject);
  change('body', current.body, input.body);
  change('occurred_at', current.occurred_at, input.occurred_at && new Date(input.occurred_at));
  if (isTask) {
    change(
      'due_at',
      current.due_at,
      input.due_at === undefined ? undefined : input.due_at && new Date(input.due_at),
    );
    change('status', current.status, input.status);
    if (set.status !== undefined)
      change('completed_at', current.completed_at, set.status === 'done' ? now : null);
  }

  const before = await orgDb(em)
    .selectFrom('engagement_links')
    .select(['target_type', 'target_id', 'participant'])
    .where('engagement_id', '=', id)
    .execute();
  let links: LinkRow[] | undefined;
  if (input.links !== undefined || input.participants !== undefined) {
    const keptParticipants = before.filter((l) => l.participant).map((l) => l.target_id);
    const participants = input.participants ?? keptParticipants;
    // Without `links`, every current link stays (a participant dropped from `participants` too).
    const explicit =
      input.links ?? before.map((l) => ({ type: l.target_type as LinkTarget, id: l.target_id }));
    links = await checkedLinks(em, explicit, participants);
    const shown = (rows: ReadonlyArray<{ type: string; id: string }>) =>
      rows.map((r) => `${r.type}:${r.id}`).sort();
    const beforeLinks = before.map((l) => ({ type: l.target_type, id: l.target_id }));
    if (input.links !== undefined && shown(beforeLinks).join() !== shown(links).join())
      changes.links = { from: beforeLinks, to: links.map(({ type, id: target }) => ({ type, id: target })) };
    const beforeParticipants = [...keptParticipants].sort();
    const afterParticipants = links
      .filter((l) => l.participant)
      .map((l) => l.id)
      .sort();
    if (beforeParticipants.join() !== afterParticipants.join())
      changes.participants = { from: beforeParticipants, to: afterParticipants };
  }

  if (Object.keys(changes).length === 0) return activityDto(em, id);
  const occurredAt = (set.occurred_at as Date | undefined) ?? current.occurred_at;
  if (Object.keys(set).length > 0)
    await orgDb(em)
      .updateTable('engagements')
      .set({ ...set, updated_at: now })
      .where('id', '=', id)
      .execute();
  else await orgDb(em).updateTable('engagements').set({ updated_at: now }).where('id', '=', id).execute();
  if (links) {
    await orgDb(em).deleteFrom('engagement_links').where('engagement_id', '=', id).execute();
    await insertLinks(em, ctx.principal.orgId, id, occurredAt, links);
  } else if (set.occurred_at !== undefined) {
    await orgDb(em)
      .updateTable('engagement_links')
      .set({ occurred_at: occurredAt })
      .where('engagement_id', '=', id)
      .execute();
  }
  const deals = (links ?? before.map((l) => ({ type: l.target_type, id: l.target_id })))
    .filter((l) => l.type === 'deal')
    .map((l) => l.id);
  await touchDeals(
    em,
    deals,
    activityClock(
      {
        type: current.type,
        occurred_at: occurredAt,
        completed_at:
          set.completed_at !== undefined ? (set.completed_at as Date | null) : current.completed_at,
      },
      now,
    ),
  );
  const activity = await activityDto(em, id);
  await emitEvent(em, { type: 'activity.updated', data: activity, changes });
  return activity;
}

/** Deletes an activity and its links; the deals' `last_activity_at` stays (a clock, not a sum). */
export async function deleteActivity(em: EntityManager, id: string): Promise<void> {
  const deleted = await orgDb(em).deleteFrom('engagements').where('id', '=', id).executeTakeFirst();
  if (Number(deleted.numDeletedRows) === 0) throw notFound('Activity');
}

type ListArgs = {
  target?: string;
  also1?: string;
  also2?: string;
  type?: string;
  status?: string;
  due_before?: Date;
  after?: string;
  limit: number;
};

/** The anchor of a page after a cursor: the activity's (occurred_at, id), at the column's full precision. */
// biome-ignore lint/suspicious/noExplicitAny: shared by two builders
const afterActivity = (eb: ExpressionBuilder<any, any>, at: string, id: string, after: string) =>
  sql<boolean>`(${sql.ref(at)}, ${sql.ref(id)}) < (${eb
    .selectFrom('engagements as anchor')
    .select(['anchor.occurred_at', 'anchor.id'])
    .where('anchor.id', '=', after)})`;

/**
 * A page of activities, newest first. Linked to a record: read from `engagement_links_target` in its order
 * (the record's links, newest first, from the cursor on), each joined to its activity. Otherwise from
 * `engagements_org_type_recent` (with a type) or `engagements_org_recent`. Other filters are checked on the
 * way; a second and third record filter are checked per row.
 */
const activityPage = orgQuery((db, a: ListArgs) => {
  let page = a.target
    ? db
        .selectFrom('engagement_links as t')
        .innerJoin('engagements as e', 'e.id', 't.engagement_id')
        .select((eb) => activityColumns(eb))
        .where('t.target_id', '=', a.target)
    : db.selectFrom('engagements as e').select((eb) => activityColumns(eb));
  for (const other of [a.also1, a.also2])
    if (other)
      page = page.where((eb) =>
        eb.exists(
          eb
            .selectFrom('engagement_links as o')
            .select(sql.lit(1).as('one'))
            .whereRef('o.engagement_id', '=', 'e.id')
            .where('o.target_id', '=', other),
        ),
      );
  if (a.type) page = page.where('e.type', '=', a.type as never);
  if (a.status) page = page.where('e.status', '=', a.status as never);
  if (a.due_before) page = page.where('e.due_at', '<', a.due_before);
  const [at, id] = a.target ? ['t.occurred_at', 't.engagement_id'] : ['e.occurred_at', 'e.id'];
  if (a.after) {
    const after = a.after;
    page = page.where((eb) => afterActivity(eb, at, id, after));
  }
  return page.orderBy(sql.ref(at), 'desc').orderBy(sql.ref(id), 'desc').limit(a.limit);
});

const anchorActivity = orgQuery(
  (db, a: { id: string }) => db.selectFrom('engagements').select('id').where('id', '=', a.id),
  { reusePlan: true },
);

/** A page of the organization's activities, newest first (by occurred_at), filtered and paged by cursor. */
export async function listActivities(em: EntityManager, query: ActivityListQuery) {
  if (query.updated_since !== undefined) return syncActivities(em, query, query.updated_since);
  if (query.after) {
    const [anchor] = await anchorActivity(em, { id: query.after });
    if (!anchor)
      throw new ApiError(
        'invalid_request',
        'after: no activity with this id (deleted since?); start again without after',
      );
  }
  const targets = [query.deal_id, query.contact_id, query.company_id].filter((t): t is string => !!t);
  const [target, ...also] = targets;
  const rows = await activityPage(em, {
    target,
    also1: also[0],
    also2: also[1],
    type: query.type,
    status: query.status,
    due_before: query.due_before ? new Date(query.due_before) : undefined,
    after: query.after,
    limit: query.limit + 1,
  });
  const data = rows.slice(0, query.limit).map(toActivityDto);
  return {
    data,
    meta: {
      limit: query.limit,
      next_cursor: rows.length > query.limit ? (data.at(-1)?.id ?? null) : null,
    },
  };
}

/** The logged activities linked to a contact, oldest first: part of a person's export. */
export async function activitiesOfContact(
  em: EntityManager,
  contactId: string,
): Promise<LoggedActivityDto[]> {
  const rows = await orgDb(em)
    .selectFrom('engagement_links as t')
    .innerJoin('engagements as e', 'e.id', 't.engagement_id')
    .select((eb) => activityColumns(eb))
    .where('t.target_id', '=', contactId)
    .orderBy('t.occurred_at')
    .orderBy('t.engagement_id')
    .execute();
  return rows.map(toActivityDto);
}

/**
 * A person's erasure: each of `values` (their name, address, number) replaced by `[erased]` in the subject
 * and body of every logged activity that holds it (a namesake's too, as elsewhere). Their links go with
 * the contact (the delete trigger). Answers how many activities changed.
 */
export async function redactActivities(em: EntityManager, values: readonly string[]): Promise<number> {
  if (values.length === 0) return 0;
  const replaced = (column: string) => {
    let text = sql<string>`${sql.ref(column)}`;
    for (const v of values) text = sql<string>`replace(${text}, ${v}, '[erased]')`;
    return text;
  };
  const holds = sql<boolean>`(${sql.join(
    values.map((v) => sql`position(${v} in subject) > 0 or position(${v} in coalesce(body, '')) > 0`),
    sql` or `,
  )})`;
  const updated = await orgDb(em)
    .updateTable('engagements')
    .set({ subject: replaced('subject'), body: replaced('body') })
    .where(holds)
    .executeTakeFirst();
  return Number(updated.numUpdatedRows);
}

/** The activities' rows as a sync reads them (docs/api/sync.md): each activity with its links, as `e`. */
const SYNCED_ACTIVITIES: SyncedObject = {
  table: 'engagements',
  alias: 'e',
  rows: (db) => db.selectFrom('engagements as e').select((eb) => activityColumns(eb)),
};

/** GET /activities with `updated_since`: the list's filters as conditions of a sync. */
async function syncActivities(em: EntityManager, query: ActivityListQuery, since: string) {
  const where: Expression<SqlBool>[] = [];
  const eb = expressionBuilder<Tables, never>();
  for (const target of [query.deal_id, query.contact_id, query.company_id])
    if (target)
      where.push(
        sql<SqlBool>`exists (${eb
          .selectFrom('engagement_links as o')
          .select(sql.lit(1).as('one'))
          .where(sql.ref('o.engagement_id'), '=', sql.ref('e.id'))
          .where('o.target_id', '=', target)})`,
      );
  if (query.type) where.push(sql<SqlBool>`e.type = ${query.type}`);
  if (query.status) where.push(sql<SqlBool>`e.status = ${query.status}`);
  if (query.due_before) where.push(sql<SqlBool>`e.due_at < ${query.due_before}::timestamptz`);
  const page = await syncList(
    em,
    SYNCED_ACTIVITIES,
    { ...query, updated_since: since },
    { granted: [], where },
  );
  const { meta, ...deleted } = syncAnswer(page, query.limit);
  return {
    data: page.rows.map(toActivityDto),
    meta: { limit: meta.limit, next_cursor: meta.next_cursor, has_more: meta.has_more },
    ...deleted,
  };
}
