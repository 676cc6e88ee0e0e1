import { type EntityManager, sqlOf, transaction } from '@crm/db';
import { z } from 'zod';
import { lockUpsertValues, upsertValue } from '../../batch.ts';
import { ApiError, describeZodIssues } from '../../errors.ts';
import { scopeToOrg } from '../../org-scope.ts';
import { DateTime, ShortText } from '../../schemas.ts';
import { placeCommitted } from '../../sequencer.ts';
import { ContactCreateInput } from '../contacts/contact.schemas.ts';
import { createdContactRows } from '../contacts/contacts.service.ts';
import { fieldRules, holderOf } from '../custom-fields/custom-fields.service.ts';
import { customValuesOf, type FieldRule } from '../custom-fields/custom-values.ts';
import { pipelineStages, type StageRow } from '../pipeline/stages.service.ts';
import { DealCreateInput } from './deal.schemas.ts';
import { type CreatedDealRows, createdDealRows, updateDeal } from './deals.service.ts';

/** At most this many contacts ride along with one imported deal. */
export const MAX_IMPORT_CONTACTS = 20;

/**
 * One row of an import: the body of `POST /deals`, plus what loading existing data needs. `stage` names
 * the stage instead of its id (case-insensitive, in the row's pipeline), `created_at` keeps the deal's
 * own past date (its activity is dated then too), and `contacts` are created on the deal.
 */
export const DealImportRow = DealCreateInput.extend({
  stage: ShortText.optional(),
  created_at: DateTime.refine((v) => Date.parse(v) <= Date.now(), 'must not be in the future').optional(),
  contacts: z
    .array(ContactCreateInput.omit({ deal_id: true }))
    .max(MAX_IMPORT_CONTACTS)
    .optional(),
});
export type DealImportRow = z.infer<typeof DealImportRow>;

/** A row as read from the file: its line (CSV: the line its record starts on) and its parsed value. */
export interface SourceRow {
  line: number;
  value: unknown;
  /** Why the line could not be read as a row at all (not JSON): it is rejected with this. */
  unreadable?: string;
}

export interface RejectedRow {
  line: number;
  error: string;
  row: unknown;
}

export interface ImportProgress {
  read: number;
  imported: number;
  rejected: number;
}

/** Rows are written in transactions of this many deals: a multi-row insert per table. */
export const IMPORT_CHUNK = 1_000;
/** How many chunks are written at once (each on its own connection). */
const IMPORT_WRITERS = 2;

/** Why an import stopped before the end of its file, and which of its lines are in the database. */
export class ImportStopped extends Error {
  readonly tally: ImportProgress;
  constructor(cause: unknown, tally: ImportProgress, committed: string, noun = 'deals') {
    super(
      `${(cause as Error)?.message ?? String(cause)} (the import stopped: ${tally.imported} ${noun} committed, ${committed}; a chunk's rows commit together or not at all)`,
      { cause },
    );
    this.tally = tally;
  }
}

/**
 * Loads an organization's existing deals (docs/cli.md: Import). Each row is validated as `POST /deals`
 * validates its body; a row that fails is rejected with its line and the reason, the others go on.
 * Valid rows are written a chunk at a time, each chunk one transaction: the deals, their contacts, a
 * 'deal_created' (and 'contact_added') activity each and a deal.created (contact.created) event each,
 * built by the same code as the single creates, so webhooks and the event feed see an import like any
 * other create. The kept counts follow by their triggers. `progress` is told after every chunk with what
 * has committed. If anything fails, the writes in flight are waited for, and the error says which lines
 * committed: with two writers they need not be a prefix of the file. With `upsertOn` (a unique field of
 * deals), a row whose value of it a deal holds changes that deal instead (see `writeChunk`).
 */
export async function importDeals(
  em: EntityManager,
  orgId: string,
  rows: AsyncIterable<SourceRow>,
  handlers: { rejected(row: RejectedRow): void | Promise<void>; progress?(p: ImportProgress): void },
  upsertOn?: FieldRule,
): Promise<ImportProgress & { created: number; updated: number; statistics: string | null }> {
  const scoped = scopeToOrg(em.fork(), orgId);
  const placement = new StagePlacement(scoped);
  const [dealRules, contactRules] = await Promise.all([
    fieldRules(scoped, 'deals'),
    fieldRules(scoped, 'contacts'),
  ]);
  const tally: ImportProgress = { read: 0, imported: 0, rejected: 0 };
  const results = { created: 0, updated: 0 };
  const committed: Array<[number, number]> = [];
  let chunk: Chunk = [];
  // Chunks are written while the next ones are read and validated, IMPORT_WRITERS at a time on their own
  // connections: the file's parsing and the database's work overlap instead of taking turns.
  const writing = new Set<Promise<void>>();
  let failed: { error: unknown } | undefined;
  const flush = async () => {
    while (writing.size >= IMPORT_WRITERS && !failed) await Promise.race(writing);
    if (failed) throw failed.error;
    const rows = chunk;
    chunk = [];
    const write: Promise<void> = writeChunk(scoped, orgId, rows, upsertOn).then(
      (done) => {
        tally.imported += rows.length;
        results.created += done.created;
        results.updated += done.updated;
        committed.push([rows[0]?.line ?? 0, rows.at(-1)?.line ?? 0]);
        try {
          handlers.progress?.({ ...tally });
        } catch {
          // a progress bar that fails to draw stops nothing
        }
      },
      (error: unknown) => {
        failed ??= { error };
      },
    );
    writing.add(write);
    void write.finally(() => writing.delete(write));
  };
  try {
    for await (const { line, value, unreadable } of rows) {
      tally.read++;
      const parsed = DealImportRow.safeParse(unreadable === undefined ? value : undefined);
      const placed = parsed.success
        ? await placement.place(parsed.data)
        : describeZodIssues(parsed.error.issues);
      const custom =
        parsed.success && typeof placed !== 'string'
          ? checkedCustom(dealRules, contactRules, parsed.data)
          : undefined;
      if (
        typeof custom === 'string' ||
        custom === undefined ||
        typeof placed === 'string' ||
        !parsed.success
      ) {
        tally.rejected++;
        const error =
          unreadable ??
          (typeof placed === 'string' ? placed : typeof custom === 'string' ? custom : 'invalid row');
        await handlers.rejected({ line, error, row: value });
        continue;
      }
      const row = parsed.data;
      const now = new Date();
      const createdAt = row.created_at ? new Date(row.created_at) : now;
      const deal = createdDealRows(orgId, row, placed, custom.deal, createdAt, now);
      const contacts = (row.contacts ?? []).map((c, i) =>
        createdContactRows(orgId, deal.dto.id, c, custom.contacts[i] ?? {}, createdAt, now),
      );
      chunk.push({ line, row, stage: placed.stage, custom, deal, contacts });
      if (chunk.length >= IMPORT_CHUNK) await flush();
    }
    if (chunk.length > 0) await flush();
    await Promise.all(writing);
    if (failed) throw failed.error;
  } catch (err) {
    await Promise.allSettled(writing);
    throw new ImportStopped(failed?.error ?? err, { ...tally }, describeRanges(committed));
  }
  // The import's changes get their places in the sync order (and its events theirs in the feed) now, as
  // the worker places a request's, and before VACUUM so that the statistics see them placed: otherwise the
  // first sync reads after it place the backlog themselves, a second each (measured: 1.4-2.4 s a read
  // after 200,000 deals, docs/api/sync.md).
  let placing: string | null = null;
  if (tally.imported > 0)
    await placeCommitted(em, Number.POSITIVE_INFINITY).catch((err: unknown) => {
      placing = `the changes were not placed in the sync order (${(err as Error).message}): the first reads place them`;
    });
  // The planner's statistics are refreshed now rather than whenever autovacuum gets to it: until then
  // it plans for tables a fraction of their size, and a deal's contacts or the briefing's ranges were
  // read by scanning (seconds instead of milliseconds, measured at a million deals). VACUUM also marks
  // the new pages all-visible, so health and the briefing read the recent open deals from their index
  // alone instead of visiting every row (9 ms instead of 70 ms at a million). Every row is in by now: a
  // failure here is reported, not raised. The analytics' sums, which each chunk appended to, are folded
  // first, so the first briefing and coaching after an import read one row per day or hour.
  let statistics: string | null = placing;
  if (tally.imported > 0)
    try {
      await scoped.execute('select crm_fold_kept_sums()');
      await scoped.execute(
        'vacuum (analyze) deals, contacts, activities, outbox_events, sync_changes, activity_signal_hours, deal_close_days, deal_closes',
      );
    } catch (err) {
      statistics = `the planner's statistics were not refreshed (${(err as Error).message}); run VACUUM (ANALYZE)`;
    }
  return { ...tally, ...results, statistics };
}

/** A row's custom values and its contacts', as the single creates check them; or why they fail. */
function checkedCustom(dealRules: FieldRule[], contactRules: FieldRule[], row: DealImportRow) {
  try {
    return {
      deal: customValuesOf(dealRules, 'deals', row.custom),
      contacts: (row.contacts ?? []).map((c) => customValuesOf(contactRules, 'contacts', c.custom)),
    };
  } catch (err) {
    if (err instanceof ApiError) return err.message;
    throw err;
  }
}

/** Committed chunks as line ranges, adjacent ones merged: `lines 1-2000, 3001-4000`. */
export function describeRanges(ranges: Array<[number, number]>): string {
  if (ranges.length === 0) return 'none of its lines';
  const sorted = [...ranges].sort((x, y) => x[0] - y[0]);
  const merged: Array<[number, number]> = [];
  for (const [from, to] of sorted) {
    const last = merged.at(-1);
    if (last && from <= last[1] + 1) last[1] = Math.max(last[1], to);
    else merged.push([from, to]);
  }
  return `the valid rows of lines ${merged.map(([f, t]) => `${f}-${t}`).join(', ')}`;
}

type Chunk = Array<{
  line: number;
  row: DealImportRow;
  stage: StageRow;
  custom: { deal: Record<string, unknown>; contacts: Record<string, unknown>[] };
  deal: CreatedDealRows;
  contacts: ReturnType<typeof createdContactRows>[];
}>;

/**
 * PostgreSQL takes at most 65,535 parameters in one statement; the embedded PGlite failed on 65,528
 * ("invalid input syntax") and takes 32,760: a multi-row insert stays under 32,767.
 */
const MAX_PARAMETERS = 32_767;
/** A chunk that meets a deadlock or a serialization failure (another writer's counts) is tried again. */
export const RETRYABLE = new Set(['40P01', '40001']);

/**
 * A chunk in one transaction: its new deals and their contacts as one multi-row insert per table. With
 * `upsertOn`, the chunk first locks its values (as a batch upsert does: a concurrent chunk or batch with
 * one of them waits, then finds the deal) and looks each up: a row whose value a deal holds, or an earlier
 * row of the chunk brought, changes that deal by the PATCH's code (the fields the row gives; its stage
 * only when it names one or a pipeline; `created_at` is the deal's own and stays), and its contacts are
 * added to that deal.
 */
async function writeChunk(
  em: EntityManager,
  orgId: string,
  chunk: Chunk,
  upsertOn?: FieldRule,
): Promise<{ created: number; updated: number }> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await transaction(em, async (tx) => {
        const updates: Array<{ id: string; item: Chunk[number] }> = [];
        let created = chunk;
        if (upsertOn) {
          await lockUpsertValues(
            tx,
            'deals',
            upsertOn,
            chunk.map((c) => c.row),
          );
          const holders = new Map<string, string | undefined>();
          created = [];
          for (const item of chunk) {
            const value = upsertValue(upsertOn, item.row);
            const key = JSON.stringify(value);
            if (value !== undefined && !holders.has(key))
              holders.set(key, await holderOf(tx, 'deals', upsertOn.key, value));
            const holder = value === undefined ? undefined : holders.get(key);
            if (holder) updates.push({ id: holder, item });
            else {
              created.push(item);
              if (value !== undefined) holders.set(key, item.deal.dto.id);
            }
          }
        }
        const now = new Date();
        const contacts = [
          ...created.flatMap((c) => c.contacts),
          ...updates.flatMap(({ id, item }) =>
            (item.row.contacts ?? []).map((c, i) =>
              createdContactRows(orgId, id, c, item.custom.contacts[i] ?? {}, now, now),
            ),
          ),
        ];
        const tables = [
          ['deals', created.map((c) => c.deal.deal)],
          ['contacts', contacts.map((c) => c.contact)],
          ['activities', [...created.map((c) => c.deal.activity), ...contacts.map((c) => c.activity)]],
          ['outbox_events', [...created.map((c) => c.deal.event), ...contacts.map((c) => c.event)]],
        ] as const;
        for (const [table, rows] of tables) {
          const columns = Object.keys(rows[0] ?? {}).length || 1;
          const per = Math.floor(MAX_PARAMETERS / columns);
          for (let i = 0; i < rows.length; i += per)
            await sqlOf(tx)
              .insertInto(table)
              .values(rows.slice(i, i + per) as never)
              .execute();
        }
        for (const { id, item } of updates) {
          await updateDeal(tx, id, updateOf(item));
          // The PATCH's entities, done with: a unit of work holding a chunk's thousand deals compares them
          // all at each flush (5,000 updated deals took 533 s instead of seconds).
          tx.clear();
        }
        return { created: created.length, updated: updates.length };
      });
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (attempt >= 3 || !code || !RETRYABLE.has(code)) throw err;
    }
  }
}

/** An imported row as the PATCH of the deal it upserts: the deal's fields it gives, its stage if it names one. */
function updateOf({ row, stage }: Chunk[number]) {
  const { stage: named, created_at: _created, contacts: _contacts, ...fields } = row;
  const moves = named !== undefined || row.stage_id !== undefined || row.pipeline_id !== undefined;
  return { ...fields, stage_id: moves ? stage.id : undefined };
}

/**
 * Where imported deals go: each pipeline's stages read once for the whole import, then the row's stage
 * by id or by name, as `POST /deals` resolves it (a stage of another pipeline is refused). Kept beside
 * `pipelineStages`' own reuse, which lasts seconds and forgets nothing it did not find: a file naming an
 * unknown pipeline on a million rows would otherwise ask the database a million times.
 */
class StagePlacement {
  private readonly pipelines = new Map<string, Promise<readonly StageRow[]>>();
  private readonly em: EntityManager;
  constructor(em: EntityManager) {
    this.em = em;
  }

  private stagesOf(pipelineId: string | undefined): Promise<readonly StageRow[]> {
    const key = pipelineId ?? '';
    let stages = this.pipelines.get(key);
    if (!stages) {
      stages = pipelineStages(this.em, pipelineId);
      this.pipelines.set(key, stages);
    }
    return stages;
  }

  /**
   * The row's stage and its pipeline's stages, or why the row cannot be placed: as `POST /deals` resolves
   * it, by `stage_id` or by `stage` (a name, case-insensitive), else the pipeline's first stage.
   */
  async place(row: DealImportRow): Promise<{ stage: StageRow; stages: readonly StageRow[] } | string> {
    const stages = await this.stagesOf(row.pipeline_id);
    const first = stages[0];
    if (!first) return 'pipeline_id: no such pipeline';
    const byId = row.stage_id ? stages.find((s) => s.id === row.stage_id) : undefined;
    if (row.stage_id && !byId) return `stage_id: no such stage in pipeline ${first.pipeline_id}`;
    const byName =
      row.stage === undefined
        ? undefined
        : stages.find((s) => s.name.toLowerCase() === row.stage?.toLowerCase());
    if (row.stage !== undefined && !byName)
      return `stage: no stage named ${JSON.stringify(row.stage)} in pipeline ${first.pipeline_name} (${stages.map((s) => s.name).join(', ')})`;
    if (byId && byName && byId.id !== byName.id) return 'stage: names another stage than stage_id';
    return { stage: byId ?? byName ?? first, stages };
  }
}
