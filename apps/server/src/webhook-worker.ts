import { matchesPlan, type Plan, placeCommitted } from '@crm/api';
import type { Config } from '@crm/config';
import type { Database } from '@crm/db';
import { WebhookWorker } from '@crm/webhooks';
import type { Logger } from './logger.ts';

/** Starts the webhook worker on an open database; embedded mode's worker is the database's only one. */
export async function startWebhookWorker(
  db: Database,
  config: Config,
  logger: Logger,
): Promise<WebhookWorker> {
  const worker = new WebhookWorker({
    orm: db.orm,
    config: config.webhooks,
    logger: logger.child({ component: 'webhooks' }),
    sole: config.database.kind === 'pglite',
    // New events get their place in the feed here too, and changed records theirs in the sync order: after
    // a bulk import, reads would otherwise place the backlog themselves, up to a second per read
    // (docs/api/events.md, docs/api/sync.md). Passes while one is full, for up to 200 ms: an import
    // changes more records (a deal and its contact) than it emits events, so a pass a dispatch would leave
    // the changes behind.
    afterDispatch: () => placeCommitted(db.orm.em, 200),
    // A webhook's filter, evaluated by the query language's evaluator (docs/api/webhooks.md#filters).
    matches: (plan, data) => matchesPlan(plan as Plan, data),
  });
  await worker.start();
  return worker;
}

export interface RunningWorker {
  db: Database;
  worker: WebhookWorker;
  /**
   * Lets attempts in flight finish (up to the shutdown timeout but its last second), gives the rest back,
   * closes the database.
   */
  stop(): Promise<void>;
}
