import type { EntityManager, Tables } from '@crm/db';
import { type Compilable, type CompiledQuery, type Kysely, sql } from 'kysely';
import { LRUCache } from 'lru-cache';
import { orgQuery } from '../org-scope.ts';

/** The tables whose writes `sync_changes` records (migration `…sync`): every record a list can count. */
const SYNCED = ['deals', 'contacts', 'companies', 'engagements'] as const;

/**
 * Where the organization's records stand: undefined while a committed write waits for its place in the
 * sync order, else the last place of each synced table. Every write of a record (its own, a batch, an import, a
 * cascade, a stage or pipeline renamed under its deals) puts its `sync_changes` row back to unplaced in
 * the write's transaction, and the sequencer then places it after every earlier place: a version read
 * before a count and read again unchanged later means no record of the organization changed in between.
 */
const recordsVersion = orgQuery(
  (db) =>
    db.selectNoFrom((eb) => [
      // Any organization's write waiting, not this one's: the unplaced rows are indexed by time alone, so
      // this is one index probe, where this organization's would walk every other's backlog.
      sql<boolean>`exists (select 1 from sync_changes where position is null)`.as('due'),
      ...SYNCED.map((object) =>
        eb
          .selectFrom('sync_changes')
          .select((s) => s.fn.max('position').as('p'))
          .where('object', '=', sql.lit(object))
          .where('position', 'is not', null)
          .as(object),
      ),
    ]),
  { reusePlan: true },
);

async function versionOf(em: EntityManager): Promise<string | undefined> {
  const [row] = (await recordsVersion(em, {})) as Array<Record<string, unknown>>;
  if (!row || row.due) return undefined;
  return SYNCED.map((object) => String(row[object] ?? 0)).join(':');
}

/**
 * A count older than this is counted again, whatever the version says: a purge of old tombstones removes
 * places, so a version could, after days, read as one seen before.
 */
const TOTAL_TTL_MS = 10 * 60_000;

/** Each database's kept totals (by its driver: servers in one process may hold organizations of one id). */
const kept = new WeakMap<object, LRUCache<string, { version: string; total: string }>>();

/** A count statement's compiled text: what it reads with what values, the organization's among them. */
function keyOf({ sql: text, parameters }: CompiledQuery): { key: string; constant: boolean } {
  // A condition on the clock counts differently a moment later with no record written.
  const constant =
    !/\b(now|clock_timestamp|statement_timestamp|transaction_timestamp)\s*\(|current_(date|time)/i.test(text);
  return { key: `${text}\u0000${JSON.stringify(parameters)}`, constant };
}

/**
 * The `count(*)` of a filtered list (`count`, as `db` runs it), counted once per state of the organization's
 * records: the same statement asked again (the list's next pages, a dashboard polling it) while no record
 * of the organization was written since answers the total counted then (docs/api/query.md, "Counted once").
 * A filter that keeps 40,000 of a million deals counts 40,000 index entries (4-5 ms); the version is read
 * in one statement of index probes. Statements naming the clock, and filters on related records (their
 * links, `deal_stakeholders`, are not in the sync order), are counted each time (`reuse: false`).
 */
export async function countOnce(
  em: EntityManager,
  db: Kysely<Tables>,
  count: Compilable<{ total: string }>,
  reuse: boolean,
): Promise<{ total: string }> {
  const compiled = count.compile();
  const run = async () => (await db.executeQuery(compiled)).rows[0]?.total ?? '0';
  if (!reuse) return { total: await run() };
  const { key, constant } = keyOf(compiled);
  if (!constant) return { total: await run() };
  const driver = em.getDriver();
  let totals = kept.get(driver);
  if (!totals) {
    totals = new LRUCache({ max: 2_000, ttl: TOTAL_TTL_MS });
    kept.set(driver, totals);
  }
  // Read before the count: a write committed after this read changes the version a later read sees, so a
  // total is only ever answered for the version read before it was counted.
  const version = await versionOf(em);
  const known = version === undefined ? undefined : totals.get(key);
  if (known && known.version === version) return { total: known.total };
  const total = await run();
  if (version !== undefined) totals.set(key, { version, total });
  return { total };
}
