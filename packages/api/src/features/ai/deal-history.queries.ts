import type { CustomFieldFacts, DealHistory, FieldValueFacts, StageFacts } from '@crm/ai';
import { HISTORY_DAYS, HISTORY_MAX_DEALS, SYSTEM_ACTIVITY_TYPES } from '@crm/ai';
import type { EntityManager, Tables } from '@crm/db';
import { type Kysely, sql } from 'kysely';
import { jsonBuildObject } from 'kysely/helpers/postgres';
import { orgQuery } from '../../org-scope.ts';
import { asJson } from '../../read-model.ts';
import { listCustomFields } from '../custom-fields/custom-fields.service.ts';
import { stakeholdersOf } from '../deals/stakeholders.service.ts';
import { ACTIVE_AT, stagesOfType } from '../pipeline/open-pipeline.sql.ts';
import { asDate, asDateOrNull } from './rows.ts';

interface DealRow {
  id: string;
  title: string;
  company_name: string | null;
  value: string | number | null;
  currency: string | null;
  notes: string | null;
  lead_source: string | null;
  expected_close_date: unknown;
  created_at: unknown;
  pipeline_id: string;
  stage_name: string;
  custom: unknown;
}
interface StageRow {
  pipeline_id: string;
  name: string;
  stage_type: StageFacts['type'];
  position: number;
  probability: number | null;
}
interface ContactRow {
  id: string;
  deal_id: string;
  name: string;
  title: string | null;
  role_type: string;
  influence_level: string | null;
  engagement_level: string | null;
  sentiment: string | null;
  notes: string | null;
  created_at: unknown;
}
interface LoggedRow {
  id: string;
  type: string;
  subject: string;
  body: string | null;
  occurred_at: unknown;
  due_at: unknown;
  status: 'open' | 'done' | null;
  completed_at: unknown;
  participants: string[] | null;
}
/** A logged activity's body is read up to this many characters: its evidence is in what a person wrote first. */
const LOGGED_BODY_CHARS = 4_000;

interface ActivityRow {
  deal_id: string;
  type: string;
  description: string | null;
  contact_id: string | null;
  changes: unknown;
  created_at: unknown;
}

/**
 * A deal (as `d`, its stage as `s`) with its contacts and activity log as JSON lists, one row per deal: on
 * the embedded database every round trip costs a few milliseconds. The AI's own entries (analyses) are no
 * history of the deal: left out before they are read.
 */
const historyRows = (db: Kysely<Tables>) =>
  db
    .selectFrom('deals as d')
    .innerJoin('pipeline_stages as s', 's.id', 'd.stage_id')
    .select((eb) => [
      'd.id',
      'd.title',
      'd.company_name',
      'd.value',
      'd.currency',
      'd.notes',
      'd.lead_source',
      'd.expected_close_date',
      'd.created_at',
      'd.pipeline_id',
      'd.custom',
      's.name as stage_name',
      // Every person on the deal with the role of their link (a contact on three deals, three roles).
      stakeholdersOf([
        'id',
        'deal_id',
        'name',
        'title',
        'role_type',
        'influence_level',
        'engagement_level',
        'sentiment',
        'notes',
        'created_at',
      ]).as('contacts'),
      eb
        .selectFrom('activities as a')
        .select((eb) =>
          sql<ActivityRow[]>`coalesce(${eb.fn
            .jsonAgg(
              jsonBuildObject({
                deal_id: eb.ref('a.deal_id'),
                type: eb.ref('a.type'),
                description: eb.ref('a.description'),
                contact_id: eb.ref('a.contact_id'),
                changes: eb.ref('a.changes'),
                created_at: eb.ref('a.created_at'),
              }),
            )
            .orderBy('a.created_at')
            .orderBy('a.id')}, '[]'::json)`.as('activities'),
        )
        .whereRef('a.deal_id', '=', 'd.id')
        .where(
          'a.type',
          'not in',
          [...SYSTEM_ACTIVITY_TYPES].map((t) => sql.lit(t)),
        )
        .as('activities'),
      // The activities people logged on the deal (down the link index), each with the contacts who took part.
      eb
        .selectFrom('engagement_links as l')
        .innerJoin('engagements as e', 'e.id', 'l.engagement_id')
        .select((eb) =>
          sql<LoggedRow[]>`coalesce(${eb.fn
            .jsonAgg(
              jsonBuildObject({
                id: eb.ref('e.id'),
                type: eb.ref('e.type'),
                subject: eb.ref('e.subject'),
                body: sql<string | null>`left(${eb.ref('e.body')}, ${sql.lit(LOGGED_BODY_CHARS)})`,
                occurred_at: eb.ref('e.occurred_at'),
                due_at: eb.ref('e.due_at'),
                status: eb.ref('e.status'),
                completed_at: eb.ref('e.completed_at'),
                participants: eb
                  .selectFrom('engagement_links as p')
                  .select((p) => p.fn.jsonAgg('p.target_id').as('ids'))
                  .whereRef('p.engagement_id', '=', 'e.id')
                  .where('p.participant', '=', sql.lit(true)),
              }),
            )
            .orderBy('l.occurred_at')
            .orderBy('l.engagement_id')}, '[]'::json)`.as('logged'),
        )
        .whereRef('l.target_id', '=', 'd.id')
        .as('logged'),
    ]);

type HistoryRow = DealRow & { contacts: unknown; activities: unknown; logged: unknown };

function historyOf(
  row: HistoryRow,
  stagesOf: Map<string, StageFacts[]>,
  customFields: CustomFieldFacts[],
): DealHistory {
  const contacts = asJson<ContactRow[]>(row.contacts);
  const activities = asJson<ActivityRow[]>(row.activities);
  const logged = asJson<LoggedRow[]>(row.logged ?? '[]');
  return {
    deal: {
      id: row.id,
      title: row.title,
      companyName: row.company_name,
      value: row.value == null ? null : Number(row.value),
      currency: row.currency,
      notes: row.notes,
      leadSource: row.lead_source,
      custom: asJson<Record<string, unknown>>(row.custom ?? '{}'),
      expectedCloseDate: asDateOrNull(row.expected_close_date),
      createdAt: asDate(row.created_at),
    },
    stages: stagesOf.get(row.pipeline_id) ?? [],
    stageName: row.stage_name,
    contacts: contacts.map((c) => ({
      id: c.id,
      name: c.name,
      title: c.title,
      role: c.role_type,
      influence: c.influence_level,
      engagement: c.engagement_level,
      sentiment: c.sentiment,
      notes: c.notes,
      createdAt: asDate(c.created_at),
    })),
    activities: activities.map((a) => ({
      type: a.type,
      at: asDate(a.created_at),
      description: a.description,
      contactId: a.contact_id,
      changes: a.changes == null ? null : asJson(a.changes),
    })),
    logged: logged.map((a) => ({
      id: a.id,
      type: a.type,
      subject: a.subject,
      body: a.body,
      at: asDate(a.occurred_at),
      dueAt: asDateOrNull(a.due_at),
      status: a.status,
      completedAt: asDateOrNull(a.completed_at),
      participants: a.participants ?? [],
    })),
    customFields,
  };
}

/** The organization's active custom fields on deals, as the AI reads them. */
async function dealCustomFields(em: EntityManager): Promise<CustomFieldFacts[]> {
  return (await listCustomFields(em, 'deals')).map((f) => ({
    key: f.key,
    label: f.label,
    type: f.type,
    aiHint: f.ai_hint ?? null,
  }));
}

const orgStages = orgQuery((db) =>
  db
    .selectFrom('pipeline_stages as s')
    .select(['s.pipeline_id', 's.name', 's.stage_type', 's.position', 's.probability'])
    .orderBy('s.position'),
);

/** The organization's stages by pipeline, in order. */
async function stagesByPipeline(em: EntityManager): Promise<Map<string, StageFacts[]>> {
  const rows = await orgStages(em, {});
  const map = new Map<string, StageFacts[]>();
  for (const r of rows) {
    const list = map.get(r.pipeline_id) ?? [];
    list.push({ name: r.name, type: r.stage_type, position: r.position, probability: r.probability });
    map.set(r.pipeline_id, list);
  }
  return map;
}

const oneHistory = orgQuery((db, a: { id: string }) =>
  historyRows(db)
    .select((eb) =>
      eb
        .selectFrom('pipeline_stages as ps')
        .select((eb) =>
          eb.fn
            .jsonAgg(
              jsonBuildObject({
                pipeline_id: eb.ref('ps.pipeline_id'),
                name: eb.ref('ps.name'),
                stage_type: eb.ref('ps.stage_type'),
                position: eb.ref('ps.position'),
                probability: eb.ref('ps.probability'),
              }),
            )
            .orderBy('ps.position')
            .as('stages'),
        )
        .whereRef('ps.pipeline_id', '=', 'd.pipeline_id')
        .as('stages'),
    )
    .where('d.id', '=', a.id),
);

/** The field history's fields the AI reads (docs/ai.md: close date pushes, days in the stage). */
const AI_FIELDS = ['stage_id', 'expected_close_date'] as const;
/** A creation's row (`*`, the record as created) and the fields' own rows. */
const AI_ROWS = ['*', ...AI_FIELDS];

/**
 * The stage and close date values of the given deals, oldest first, in one statement: per deal an index
 * range of (org_id, record_id, field, valid_from) for each of the three fields (`*` the creation's row, of
 * which only the two values leave the database).
 */
const fieldValueRows = orgQuery((db, a: { ids: string[] }) =>
  db
    .selectFrom('field_history as h')
    .select([
      'h.record_id',
      'h.field',
      sql<string>`(case when h.field = '*'
        then jsonb_build_object(${sql.join(
          AI_FIELDS.map((f) => sql`${sql.lit(f)}, h.value -> ${sql.lit(f)}`),
        )}) else h.value end)::text`.as('value'),
      'h.valid_from',
      'h.event_id',
    ])
    .where(sql<boolean>`h.record_id = any(${a.ids}::uuid[])`)
    .where(
      'h.field',
      'in',
      AI_ROWS.map((f) => sql.lit(f)),
    )
    .orderBy('h.record_id')
    .orderBy('h.valid_from')
    .orderBy('h.id'),
);

/** Each deal's stage and close date values (FieldValueFacts, oldest first), by deal id. */
export async function fieldValues(em: EntityManager, ids: string[]): Promise<Map<string, FieldValueFacts[]>> {
  const byDeal = new Map<string, FieldValueFacts[]>();
  if (ids.length === 0) return byDeal;
  for (const row of await fieldValueRows(em, { ids })) {
    const parsed: unknown = JSON.parse(row.value);
    const at = asDate(row.valid_from);
    const list = byDeal.get(row.record_id) ?? [];
    const values: Array<[string, unknown]> =
      row.field === '*' ? Object.entries(parsed as Record<string, unknown>) : [[row.field, parsed]];
    for (const [field, value] of values)
      list.push({
        field: field as FieldValueFacts['field'],
        value: typeof value === 'string' ? value : null,
        at,
        eventId: row.event_id,
      });
    byDeal.set(row.record_id, list);
  }
  return byDeal;
}

/** One deal's history (its pipeline, contacts and activity log), or undefined when it is not the caller's. */
export async function loadDealHistory(em: EntityManager, dealId: string): Promise<DealHistory | undefined> {
  const [[row], customFields, values] = await Promise.all([
    oneHistory(em, { id: dealId }),
    dealCustomFields(em),
    fieldValues(em, [dealId]),
  ]);
  if (!row) return undefined;
  const stages = asJson<StageRow[]>(row.stages ?? '[]').map((r) => ({
    name: r.name,
    type: r.stage_type,
    position: r.position,
    probability: r.probability,
  }));
  return {
    ...historyOf(row, new Map([[row.pipeline_id, stages]]), customFields),
    fieldHistory: values.get(dealId) ?? [],
  };
}

/** Closed deals are read for a fit in pages of this many, so other requests' queries run in between. */
const HISTORY_PAGE = 250;

/** The recent closed deals whose histories a fit reads (see loadClosedHistories), latest first. */
const recentClosed = orgQuery((db) =>
  db
    .with('stages', () => stagesOfType('won', 'lost'))
    .selectFrom('stages as s')
    .crossJoinLateral((eb) =>
      eb
        .selectFrom('deals as d')
        .select(['d.id', ACTIVE_AT.as('at')])
        .whereRef('d.stage_id', '=', 's.id')
        .where(ACTIVE_AT, '>', sql<Date>`now() - make_interval(days => ${sql.lit(HISTORY_DAYS)})`)
        .orderBy(ACTIVE_AT, 'desc')
        .orderBy('d.id', 'desc')
        .limit(sql.lit(HISTORY_MAX_DEALS))
        .as('x'),
    )
    .select('x.id')
    .orderBy('x.at', 'desc')
    .orderBy('x.id', 'desc')
    .limit(sql.lit(HISTORY_MAX_DEALS)),
);

/** The histories of closed deals, by id (a deal reopened since is left out). */
const closedHistories = orgQuery((db, a: { ids: string[] }) =>
  historyRows(db)
    .where('s.stage_type', '<>', sql.lit('open'))
    .where('d.id', '=', (eb) => eb.fn.any(eb.val(a.ids))),
);

/**
 * The histories of the organization's recent closed deals, for fitting its win model: the HISTORY_MAX_DEALS
 * closed deals with the latest activity (a close is one) within HISTORY_DAYS, the clock the model's
 * fingerprint watches (win-models.ts), so scoring a deal changes neither. They are picked down the
 * (org_id, stage_id, last activity) index of each closed stage, then their histories are read page by page,
 * by id: on the embedded (single-threaded) database one large read would hold every request behind it.
 */
export async function loadClosedHistories(em: EntityManager): Promise<DealHistory[]> {
  const stagesOf = await stagesByPipeline(em);
  const customFields = await dealCustomFields(em);
  const chosen = await recentClosed(em, {});
  const histories: DealHistory[] = [];
  for (let start = 0; start < chosen.length; start += HISTORY_PAGE) {
    const ids = chosen.slice(start, start + HISTORY_PAGE).map((r) => r.id);
    const rows = await closedHistories(em, { ids });
    const byId = new Map(rows.map((row) => [row.id, row]));
    // In the chosen order; a deal deleted or reopened since is left out.
    for (const id of ids) {
      const row = byId.get(id);
      if (row) histories.push(historyOf(row, stagesOf, customFields));
    }
  }
  // Their stage and close date values in one statement for the fit (not one per deal).
  const values = await fieldValues(
    em,
    histories.map((h) => h.deal.id),
  );
  for (const h of histories) h.fieldHistory = values.get(h.deal.id) ?? [];
  return histories;
}
