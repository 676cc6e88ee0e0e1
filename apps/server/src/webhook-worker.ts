import { matchesPlan, type Plan, placeOnePass } from '@crm/api';
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
    // New events get their place in the feed here too, a pass at a time: after a bulk import, reads of the
    // feed would otherwise place the backlog themselves, up to a second per read (docs/api/events.md).
    afterDispatch: () => placeOnePass(db.orm.em),
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
