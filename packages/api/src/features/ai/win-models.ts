import { setTimeout as delay } from 'node:timers/promises';
import { type FittedWinModel, fitWinModelOffThread, MIN_CLOSED_DEALS } from '@crm/ai';
import type { EntityManager, Orm, Tables } from '@crm/db';
import { expressionBuilder, sql } from 'kysely';
import { LRUCache } from 'lru-cache';
import { currentOrg, orgQuery, scopeToOrg } from '../../org-scope.ts';
import { ACTIVE_AT, keptOfStages, type StagesCte, stagesOfType } from '../pipeline/open-pipeline.sql.ts';
import { loadClosedHistories } from './deal-history.queries.ts';

/** How often a process re-reads an organization's history fingerprint (so a new close is seen this fast). */
export const FINGERPRINT_TTL_MS = 2_000;
/** How long a request waits for a fit in progress before answering with the model it already has. */
export const FIT_WAIT_MS = 20;

interface Entry {
  fingerprint: string | null;
  model: FittedWinModel | null;
  checkedAt: number;
  fitting?: Promise<void> | undefined;
}

/** The statement's tables: the organization's and its closed stages (`stages`). */
const closedStages = expressionBuilder<Tables & StagesCte, never>();

/**
 * What identifies an organization's won/lost history: how many closed deals it has (the kept counts) and
 * the last activity among them (a close, an edit, a contact's change each record one; a deletion or a
 * reopening changes the count). An analysis records no activity, so scoring a closed deal refits nothing.
 * One index descent per closed stage: the same cost at any size.
 */
const fingerprintOf = orgQuery((db) =>
  db
    .with('stages', () => stagesOfType('won', 'lost'))
    .selectNoFrom([
      keptOfStages()
        .select((eb) => eb.fn.coalesce(eb.fn.sum<string>('n'), sql.lit(0)).as('n'))
        .as('n'),
      closedStages
        .selectFrom('stages as s')
        .crossJoinLateral((eb) =>
          eb
            .selectFrom('deals as d')
            .select(sql<Date>`max(${ACTIVE_AT})`.as('last'))
            .whereRef('d.stage_id', '=', 's.id')
            .as('x'),
        )
        .select(sql<Date>`max(last)`.as('changed'))
        .as('changed'),
    ]),
);

async function historyFingerprint(em: EntityManager): Promise<string> {
  const [row] = await fingerprintOf(em, {});
  const changed = row?.changed instanceof Date ? row.changed.toISOString() : String(row?.changed ?? '');
  return `${Number(row?.n ?? 0)}@${changed}`;
}

/**
 * Each organization's fitted win model, per server process. Every process fits its own from the shared
 * database, so any number of instances agree without coordinating: when an organization's history
 * fingerprint changes, the model is refitted in a worker thread while requests go on with the previous
 * model (or the prior), waiting at most FIT_WAIT_MS for the new one. Least recently used organizations
 * are dropped past 2,000.
 */
export class WinModels {
  private readonly entries = new LRUCache<string, Entry>({ max: 2_000 });
  private readonly orm: Orm;

  constructor(orm: Orm) {
    this.orm = orm;
  }

  async current(em: EntityManager): Promise<FittedWinModel | null> {
    const orgId = currentOrg(em);
    let entry = this.entries.get(orgId);
    if (!entry) {
      entry = { fingerprint: null, model: null, checkedAt: 0 };
      this.entries.set(orgId, entry);
    }
    const now = Date.now();
    if (!entry.fitting && now - entry.checkedAt >= FINGERPRINT_TTL_MS) {
      entry.checkedAt = now;
      const fingerprint = await historyFingerprint(em);
      if (fingerprint !== entry.fingerprint && !entry.fitting)
        entry.fitting = this.refit(orgId, entry, fingerprint);
    }
    if (entry.fitting) await Promise.race([entry.fitting, delay(FIT_WAIT_MS)]);
    return entry.model;
  }

  private async refit(orgId: string, entry: Entry, fingerprint: string): Promise<void> {
    try {
      // Its own unit of work: the fit outlives the request that noticed the change.
      const histories = await loadClosedHistories(scopeToOrg(this.orm.em.fork(), orgId));
      entry.model =
        histories.length >= MIN_CLOSED_DEALS ? await fitWinModelOffThread(histories, new Date()) : null;
      entry.fingerprint = fingerprint;
    } catch (err) {
      // The previous model stays; the next fingerprint check tries again.
      process.emitWarning(`fitting the win model of organization ${orgId} failed: ${(err as Error).message}`);
    } finally {
      entry.fitting = undefined;
    }
  }
}
