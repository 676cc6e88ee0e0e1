import { historyFactsAt } from '@crm/ai';
import { type EntityManager, HISTORY_FIELDS } from '@crm/db';
import { sql } from 'kysely';
import { nearest } from '../../did-you-mean.ts';
import { ApiError, notFound } from '../../errors.ts';
import { orgQuery } from '../../org-scope.ts';
import { asJson, isoOf } from '../../read-model.ts';
import type { CustomObject } from '../custom-fields/custom-field.schemas.ts';
import { fieldRules } from '../custom-fields/custom-fields.service.ts';
import type { HistoryQuery } from './history.schemas.ts';

/** The records with a history (the trigger's `record_type`), their tables and names in errors. */
export type HistoryObject = keyof typeof HISTORY_FIELDS;
const TABLE = { deal: 'deals', contact: 'contacts', company: 'companies' } as const satisfies Record<
  HistoryObject,
  CustomObject
>;
const WHAT = { deal: 'Deal', contact: 'Contact', company: 'Company' } as const;

/**
 * A value as JSON text, parsed here: the drivers hand a jsonb string back parsed or not (asJson cannot tell
 * a stored "[1]" string from an array).
 */
const valueText = (column: string) => sql<string>`${sql.ref(column)}::text`.as('value');
const parsedValue = (text: string): unknown => JSON.parse(text);

/** A record's creation time, when it is the organization's: whether it is there at all. */
const bornAt = {
  deal: orgQuery((db, a: { id: string }) =>
    db.selectFrom('deals').select(isoOf('created_at').as('created_at')).where('id', '=', a.id),
  ),
  contact: orgQuery((db, a: { id: string }) =>
    db.selectFrom('contacts').select(isoOf('created_at').as('created_at')).where('id', '=', a.id),
  ),
  company: orgQuery((db, a: { id: string }) =>
    db.selectFrom('companies').select(isoOf('created_at').as('created_at')).where('id', '=', a.id),
  ),
};

async function recordBorn(em: EntityManager, object: HistoryObject, id: string): Promise<string> {
  const [row] = await bornAt[object](em, { id });
  if (!row) throw notFound(WHAT[object]);
  return row.created_at;
}

/**
 * The fields a client may ask the history of: the tracked ones and the object's custom fields (archived
 * ones too: their past is still there). Anything else is a 400 naming the nearest.
 */
async function checkFields(em: EntityManager, object: HistoryObject, fields: readonly string[]) {
  const known = [
    ...HISTORY_FIELDS[object],
    ...(await fieldRules(em, TABLE[object])).map((r) => `custom.${r.key}`),
  ];
  for (const field of fields) {
    if (known.includes(field)) continue;
    const near = nearest(field, known);
    throw new ApiError(
      'invalid_request',
      `field: unknown field "${field}"${near ? `; did you mean "${near}"?` : `; the fields are ${known.join(', ')}`}`,
    );
  }
}

/** The row a creation writes: every field's first value in one object (see the migration). */
const CREATION = '*';

/** A record's history rows, oldest first: its creation's and those of the fields asked (index ranges). */
const historyRows = orgQuery((db, a: { record: string; fields?: string[] }) => {
  let rows = db
    .selectFrom('field_history')
    .select(['id', 'field', valueText('value'), isoOf('valid_from').as('from'), 'actor', 'event_id'])
    .where('record_id', '=', a.record);
  if (a.fields !== undefined) rows = rows.where(sql<boolean>`field = any(${a.fields}::text[])`);
  return rows.orderBy('valid_from').orderBy('id');
});

type HistoryRow = Awaited<ReturnType<typeof historyRows>>[number];

export interface HistoryEntry {
  field: string;
  value: unknown;
  from: string;
  until: string | null;
  actor: Record<string, unknown> | null;
  event_id: string | null;
}

/**
 * The entries of a record's rows (in time order): a creation's row gives one per field, each entry is held
 * until the next of its field. Only `fields`, when given.
 */
function entriesOf(
  object: HistoryObject,
  rows: readonly HistoryRow[],
  fields?: ReadonlySet<string>,
): HistoryEntry[] {
  const entries: HistoryEntry[] = [];
  const current = new Map<string, HistoryEntry>();
  for (const row of rows) {
    const value = parsedValue(row.value);
    const values = row.field === CREATION ? createdValues(object, value) : [[row.field, value] as const];
    const actor = asJson<Record<string, unknown> | null>(row.actor);
    for (const [field, held] of values) {
      if (fields && !fields.has(field)) continue;
      const entry = { field, value: held, from: row.from, until: null, actor, event_id: row.event_id };
      const before = current.get(field);
      if (before) before.until = row.from;
      current.set(field, entry);
      entries.push(entry);
    }
  }
  return entries;
}

/** Each tracked field's and custom field's value in a creation's row: `[field, value]`. */
function createdValues(object: HistoryObject, created: unknown): Array<readonly [string, unknown]> {
  const record = created as Record<string, unknown> & { custom?: Record<string, unknown> };
  return [
    ...HISTORY_FIELDS[object].map((f) => [f, record[f] ?? null] as const),
    ...Object.entries(record.custom ?? {}).map(([key, v]) => [`custom.${key}`, v] as const),
  ];
}

/** A record's entries, of `fields` or all. */
async function recordEntries(
  em: EntityManager,
  object: HistoryObject,
  id: string,
  fields?: readonly string[],
) {
  const rows = await historyRows(em, { record: id, fields: fields ? [...fields, CREATION] : undefined });
  return entriesOf(object, rows, fields ? new Set(fields) : undefined);
}

/**
 * `GET /{objects}/{id}/history`: every value the record's fields held, oldest first, page by page. The
 * cursor is the position in that list: it only grows at its end (each change is later than those before).
 */
export async function recordHistory(em: EntityManager, object: HistoryObject, query: HistoryQuery) {
  await Promise.all([
    recordBorn(em, object, query.id),
    query.field ? checkFields(em, object, query.field) : undefined,
  ]);
  const entries = await recordEntries(em, object, query.id, query.field);
  const start = query.after ? Number(query.after) : 0;
  const end = start + query.limit;
  return {
    data: entries.slice(start, end).map((e) => ({ ...e, actor: e.actor as never })),
    meta: { limit: query.limit, next_cursor: entries.length > end ? String(end) : null },
  };
}

/** Each field's value at `at`: its newest row from then or before (one index range per field). */
const valuesAt = orgQuery((db, a: { record: string; at: string }) =>
  db
    .selectFrom('field_history')
    .distinctOn('field')
    .select(['field', valueText('value'), isoOf('valid_from').as('from')])
    .where('record_id', '=', a.record)
    .where('valid_from', '<=', sql<Date>`${a.at}::timestamptz`)
    .orderBy('field')
    .orderBy('valid_from', 'desc')
    .orderBy('id', 'desc'),
);

const historyStart = orgQuery((db, a: { record: string }) =>
  db
    .selectFrom('field_history')
    .select(
      sql<string | null>`to_char(min(valid_from) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`.as(
        'start',
      ),
    )
    .where('record_id', '=', a.record),
);

/** A record's fields as they were at `asOf`. */
export interface PastValues {
  /** Each tracked field's value then (null when it had none). */
  fields: Record<string, unknown>;
  /** The custom values set then. */
  custom: Record<string, unknown>;
  /** The time of the newest change then, after the creation; null if none. */
  changedAt: string | null;
}

/**
 * The record's values at `asOf`: a 404 before it was created (it was not there), a 400 between its
 * creation and the start of its history (a record older than history, changed before it began: what it
 * held then is not known, and is not guessed).
 */
export async function valuesAsOf(
  em: EntityManager,
  object: HistoryObject,
  id: string,
  asOf: string,
): Promise<PastValues> {
  const created = await recordBorn(em, object, id);
  const at = new Date(asOf);
  if (at < new Date(created))
    throw new ApiError(
      'not_found',
      `${WHAT[object]} not found as of ${at.toISOString()}: created ${created}`,
    );
  const rows = await valuesAt(em, { record: id, at: at.toISOString() });
  if (rows.length === 0) {
    const [first] = await historyStart(em, { record: id });
    throw new ApiError(
      'invalid_request',
      `as_of: the history of this ${object} starts at ${first?.start ?? 'a later time'} (older values were not kept)`,
    );
  }
  const fields: Record<string, unknown> = Object.fromEntries(HISTORY_FIELDS[object].map((f) => [f, null]));
  const custom: Record<string, unknown> = {};
  let changedAt: string | null = null;
  const hold = (field: string, value: unknown) => {
    if (!field.startsWith('custom.')) fields[field] = value;
    else if (value !== null) custom[field.slice('custom.'.length)] = value;
    else delete custom[field.slice('custom.'.length)];
  };
  // The creation's values first (its row is the oldest), then each field's newest change then.
  const creation = rows.find((r) => r.field === CREATION);
  if (creation)
    for (const [field, value] of createdValues(object, parsedValue(creation.value))) hold(field, value);
  for (const row of rows) {
    if (row.field === CREATION) continue;
    hold(row.field, parsedValue(row.value));
    if (changedAt === null || row.from > changedAt) changedAt = row.from;
  }
  return { fields, custom, changedAt };
}

/** `record` with its tracked fields, custom values and `updated_at` as they were (`past`). */
export function asItWas<T extends { custom: Record<string, unknown>; updated_at: string | null }>(
  record: T,
  past: PastValues,
): T {
  return { ...record, ...past.fields, custom: past.custom, updated_at: past.changedAt };
}

const stageNames = orgQuery((db, a: { ids: string[] }) =>
  db
    .selectFrom('pipeline_stages as s')
    .innerJoin('pipelines as p', 'p.id', 's.pipeline_id')
    .select(['s.id', 's.name', 's.stage_type', 'p.name as pipeline_name'])
    .where(sql<boolean>`s.id = any(${a.ids}::uuid[])`),
);

/** The stages named by id (their names now), for a past stage_id. */
export async function stagesById(em: EntityManager, ids: readonly string[]) {
  const rows = ids.length > 0 ? await stageNames(em, { ids: [...new Set(ids)] }) : [];
  return new Map(rows.map((r) => [r.id, r]));
}

/** `?as_of=` of GET /deals/{id}: the deal's fields as they were, its stage's names (as they are now). */
export async function dealAsOf<
  D extends {
    deal: {
      custom: Record<string, unknown>;
      updated_at: string | null;
      stage_id: string | null;
      stage_name: string | null;
      stage_type: string | null;
      pipeline_name: string | null;
    };
  },
>(em: EntityManager, detail: D, id: string, asOf: string): Promise<D> {
  const past = await valuesAsOf(em, 'deal', id, asOf);
  const deal = asItWas(detail.deal, past);
  if (deal.stage_id !== detail.deal.stage_id) {
    const stage = deal.stage_id ? (await stagesById(em, [deal.stage_id])).get(deal.stage_id) : undefined;
    deal.stage_name = stage?.name ?? null;
    deal.stage_type = stage?.stage_type ?? null;
    deal.pipeline_name = stage?.pipeline_name ?? null;
  }
  return { ...detail, deal };
}

const DAY_MS = 86_400_000;
const days = (ms: number) => Math.round((ms / DAY_MS) * 100) / 100;

/**
 * `GET /deals/{id}/history/summary`: facts derived from the deal's history: the stage it is in and since
 * when, the days it spent in each earlier stage, and how its expected close date moved.
 */
export async function dealHistorySummary(em: EntityManager, id: string, now: Date = new Date()) {
  await recordBorn(em, 'deal', id);
  const entries = await recordEntries(em, 'deal', id, ['stage_id', 'expected_close_date']);
  const stageRows = entries.filter((e) => e.field === 'stage_id');
  const closeRows = entries.filter((e) => e.field === 'expected_close_date');
  const closeDates = closeRows.map((e) => e.value as string | null).filter((v): v is string => v !== null);
  const names = await stagesById(
    em,
    stageRows.map((r) => r.value as string),
  );
  const current = stageRows.at(-1);
  if (!current) throw new Error(`deal ${id} has no stage history`);
  const past = new Map<string, { visits: number; ms: number }>();
  stageRows.slice(0, -1).forEach((row, i) => {
    const stage = row.value as string;
    const until = stageRows[i + 1]?.from as string;
    const spent = past.get(stage) ?? { visits: 0, ms: 0 };
    spent.ms += Date.parse(until) - Date.parse(row.from);
    spent.visits += 1;
    past.set(stage, spent);
  });
  const currentId = current.value as string;
  // Moves counted as the AI counts them (one definition: historyFactsAt in @crm/ai).
  const moves = historyFactsAt(
    closeRows.map((e) => ({
      field: 'expected_close_date' as const,
      value: e.value as string | null,
      at: new Date(e.from),
      eventId: e.event_id,
    })),
    now.getTime(),
  );
  const pushed = moves.pushes.length;
  const pulledIn = moves.pulledIn;
  const [start] = await historyStart(em, { record: id });
  return {
    deal_id: id,
    history_from: start?.start as string,
    stage: {
      stage_id: currentId,
      stage_name: names.get(currentId)?.name ?? null,
      since: current.from,
      days: days(now.getTime() - Date.parse(current.from)),
    },
    stages: [...past].map(([stage, spent]) => ({
      stage_id: stage,
      stage_name: names.get(stage)?.name ?? null,
      days: days(spent.ms),
      visits: spent.visits,
    })),
    expected_close_date: {
      moves: pushed + pulledIn,
      pushed,
      pulled_in: pulledIn,
      first: closeDates[0] ?? null,
      current: (closeRows.at(-1)?.value as string | null | undefined) ?? null,
    },
  };
}
