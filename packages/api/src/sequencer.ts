import { type EntityManager, transaction } from '@crm/db';
import { TOMBSTONE_DAYS } from './query/sync-schemas.ts';

/** The advisory lock that makes the sequencer one at a time, across every instance. */
const SEQUENCER_LOCK = 7_261_126_001;
/** Events (and sync changes) placed per pass: a backlog is worked off in passes this size. */
const SEQUENCER_BATCH = 5_000;

/**
 * Gives what committed its place in a walk that never skips: events in the feed (docs/api/events.md,
 * "The cursor never skips") and changed records in the sync order (docs/api/sync.md): the next positions
 * of a sequence, to the rows not placed yet. One pass at a time (an advisory lock held to its commit), so
 * each pass's positions come after every earlier pass's, and a pass only sees committed rows. Hence a
 * reader that has read up to a position never finds a new row behind it: a row committed late is placed
 * late, whatever its id or timestamp. Each read of the feed or of a sync runs this first.
 */
export async function placeCommitted(em: EntityManager, budgetMs = 1_000): Promise<number> {
  // Nothing committed waits for a place (the usual read between writes): no pass, no transaction. What
  // commits after this look is placed by a later pass, after whatever this read sees: skipping is safe.
  const [due] = await em.fork().execute<{ due: boolean }[]>(
    `select exists (select 1 from outbox_events where position is null)
         or exists (select 1 from sync_changes where position is null) as due`,
  );
  if (!due?.due) return 0;
  // A backlog (many writers, no reader for a while) is worked off pass after pass, for at most a second.
  const started = Date.now();
  let total = 0;
  for (;;) {
    const placed = await placeOnePass(em);
    total += placed;
    if (placed < SEQUENCER_BATCH || Date.now() - started > budgetMs) return total;
  }
}

/**
 * One sequencer pass (up to SEQUENCER_BATCH events and as many sync changes). Returns the larger of the two counts (a full batch of either means more to do).
 */
function placeOnePass(em: EntityManager): Promise<number> {
  return transaction(em.fork(), async (tx) => {
    await tx.execute(`select pg_advisory_xact_lock(${SEQUENCER_LOCK})`);
    const events = await tx.execute<{ id: string }[]>(
      `update outbox_events o set position = n.position
         from (select id, nextval('outbox_events_position') as position
                 from (select id from outbox_events where position is null
                        order by created_at, id limit ${SEQUENCER_BATCH}) todo) n
        where o.id = n.id
        returning o.id`,
    );
    // A row a writer holds (its record being written again) is left to a later pass, after that write
    // commits: the pass never waits for a writer's transaction.
    const [changes] = await tx.execute<{ placed: string | number; last: string | number | null }[]>(
      `with n as (
         select object, id, nextval('sync_changes_position') as position
           from (select object, id from sync_changes where position is null
                  order by changed_at limit ${SEQUENCER_BATCH} for update skip locked) todo),
       placed as (
         update sync_changes s set position = n.position from n
          where s.object = n.object and s.id = n.id returning s.position)
       select count(*) as placed, max(position) as last from placed`,
    );
    const placed = Number(changes?.placed ?? 0);
    // When the pass ended, taken after its placing statement's snapshot: whatever committed at or after
    // this time is placed by a later pass, which is where `updated_since` starts its walk.
    if (placed > 0)
      await tx.execute(
        `insert into sync_marks (position, at) values (${String(changes?.last)}, clock_timestamp())`,
      );
    if (placed > 0 || events.length > 0) await purgeOld(tx);
    return Math.max(events.length, placed);
  });
}

/**
 * Tombstones older than TOMBSTONE_DAYS, and the marks before then but the newest of them (where a walk
 * from any older time starts, and what says a cursor is too old).
 */
async function purgeOld(tx: EntityManager): Promise<void> {
  const before = `now() - interval '${TOMBSTONE_DAYS} days'`;
  await tx.execute(`delete from sync_changes where deleted_at < ${before}`);
  await tx.execute(
    `delete from sync_marks where at < ${before}
        and position < (select position from sync_marks where at < ${before} order by at desc limit 1)`,
  );
}
