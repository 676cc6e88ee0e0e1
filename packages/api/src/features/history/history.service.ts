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

/**
 * A record's history rows in time order, each with when it stopped holding (the next row of its field),
 * from after the cursor's row on. The window runs over the record's rows of the fields asked (a record has
 * tens to hundreds), read from the (org_id, record_id, field, valid_from) index.
 */
const historyRows = orgQuery(
  (db, a: { record: string; fields?: string[]; after?: string; at?: string; limit: number }) => {
    let rows = db
      .selectFrom('field_history as h')
      .select([
        'h.id',
        'h.field',
        'h.value',
        'h.valid_from',
        'h.actor',
        'h.event_id',
        sql<Date | null>`lead(h.valid_from) over (partition by h.field order by h.valid_from, h.id)`.as(
          'valid_until',
        ),
      ])
      .where('h.record_id', '=', a.record);
    if (a.fields !== undefined) rows = rows.where(sql<boolean>`h.field = any(${a.fields}::text[])`);
    let page = db
      .selectFrom(rows.as('r'))
      .select([
        'r.id',
        'r.field',
        valueText('r.value'),
        isoOf('r.valid_from').as('from'),
        isoOf('r.valid_until').as('until'),
        'r.actor',
        'r.event_id',
      ]);
    if (a.after !== undefined) {
      const anchor = db
        .selectFrom('field_history as anchor')
        .select(['anchor.valid_from', 'anchor.id'])
        .where('anchor.id', '=', a.after)
        .where('anchor.record_id', '=', a.record);
      page = page.where(sql<boolean>`(r.valid_from, r.id) > (${anchor})`);
    }
    return page.orderBy('r.valid_from').orderBy('r.id').limit(a.limit);
  },
);

/** `GET /{objects}/{id}/history`: every value the record's fields held, oldest first, page by page. */
export async function recordHistory(em: EntityManager, object: HistoryObject, query: HistoryQuery) {
  await Promise.all([
    recordBorn(em, object, query.id),
    query.field ? checkFields(em, object, query.field) : undefined,
  ]);
  const rows = await historyRows(em, {
    record: query.id,
    fields: query.field,
    after: query.after,
    limit: query.limit + 1,
  });
  const page = rows.slice(0, query.limit);
  return {
    data: page.map((r) => ({
      field: r.field,
      value: parsedValue(r.value),
      from: r.from,
      until: r.until,
      actor: asJson<Record<string, unknown> | null>(r.actor) as never,
      event_id: r.event_id,
    })),
    meta: {
      limit: query.limit,
      next_cursor: rows.length > query.limit ? String(page.at(-1)?.id) : null,
    },
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
  for (const row of rows) {
    const value = parsedValue(row.value);
    if (row.field.startsWith('custom.')) {
      if (value !== null) custom[row.field.slice('custom.'.length)] = value;
    } else fields[row.field] = value;
    if (row.from > created && (changedAt === null || row.from > changedAt)) changedAt = row.from;
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

const fieldRows = orgQuery((db, a: { record: string; fields: string[] }) =>
  db
    .selectFrom('field_history')
    .select(['field', valueText('value'), isoOf('valid_from').as('from')])
    .where('record_id', '=', a.record)
    .where(sql<boolean>`field = any(${a.fields}::text[])`)
    .orderBy('field')
    .orderBy('valid_from')
    .orderBy('id'),
);

/**
 * `GET /deals/{id}/history/summary`: facts derived from the deal's history: the stage it is in and since
 * when, the days it spent in each earlier stage, and how its expected close date moved.
 */
export async function dealHistorySummary(em: EntityManager, id: string, now: Date = new Date()) {
  await recordBorn(em, 'deal', id);
  const rows = await fieldRows(em, { record: id, fields: ['stage_id', 'expected_close_date'] });
  const stageRows = rows.filter((r) => r.field === 'stage_id');
  const closeRows = rows.filter((r) => r.field === 'expected_close_date');
  const closeDates = closeRows
    .map((r) => parsedValue(r.value) as string | null)
    .filter((v): v is string => v !== null);
  const names = await stagesById(
    em,
    stageRows.map((r) => parsedValue(r.value) as string),
  );
  const current = stageRows.at(-1);
  if (!current) throw new Error(`deal ${id} has no stage history`);
  const past = new Map<string, { visits: number; ms: number }>();
  stageRows.slice(0, -1).forEach((row, i) => {
    const stage = parsedValue(row.value) as string;
    const until = stageRows[i + 1]?.from as string;
    const spent = past.get(stage) ?? { visits: 0, ms: 0 };
    spent.ms += Date.parse(until) - Date.parse(row.from);
    spent.visits += 1;
    past.set(stage, spent);
  });
  const currentId = parsedValue(current.value) as string;
  let pushed = 0;
  let pulledIn = 0;
  for (let i = 1; i < closeDates.length; i++) {
    const [before, after] = [Date.parse(closeDates[i - 1] as string), Date.parse(closeDates[i] as string)];
    if (after > before) pushed++;
    else if (after < before) pulledIn++;
  }
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
      current: (parsedValue(closeRows.at(-1)?.value ?? 'null') as string | null) ?? null,
    },
  };
}
