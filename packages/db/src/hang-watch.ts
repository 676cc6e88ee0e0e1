import { AsyncLocalStorage } from 'node:async_hooks';

/** How long a request's statement waits for its answer before the database is probed. */
const SUSPECT_AFTER_MS = 1_000;
/** How long the database has to answer a probe before it counts as hung; /readyz waits as long. */
export const DATABASE_PROBE_TIMEOUT_MS = 1_500;

/** What a request's statement abandoned on a hung database rejects with (answered 503 by its message). */
class DatabaseHungError extends Error {
  override name = 'DatabaseHungError';
  constructor() {
    super(`the database did not answer a probe within ${DATABASE_PROBE_TIMEOUT_MS} ms: statement abandoned`);
  }
}

const requests = new AsyncLocalStorage<true>();

/** Runs `fn` as the handling of one request: its statements are watched (see `watchHangs`). */
export function asRequest<T>(fn: () => T): T {
  return requests.run(true, fn);
}

/**
 * A request's statement that has had no answer for a second has the database probed (`probe`, one at a
 * time, shared by every statement asking meanwhile); if the database does not answer that either, it is
 * hung (frozen, or a network that drops everything), and the statement is abandoned there and then
 * (`abandon` keeps its connection from going back to the pool), instead of at the client's statement
 * timeout (11 s by default): the request answers 503 about 2.5 s after the database stopped. A statement
 * that is slow on a database that answers runs on. Statements outside requests (migrations, `crm import`, the webhook worker,
 * housekeeping) are not watched: they keep the whole statement timeout, through a short hang too.
 */
export function watchHangs(probe: () => Promise<boolean>) {
  let probing: Promise<boolean> | undefined;
  const answers = () => {
    // A probe that could not even be made says nothing about the database.
    probing ??= probe()
      .catch(() => true)
      .finally(() => {
        probing = undefined;
      });
    return probing;
  };
  return <T>(statement: Promise<T>, abandon: () => void): Promise<T> => {
    if (!requests.getStore()) return statement;
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      let timer: NodeJS.Timeout;
      const suspect = () => {
        void answers().then((answered) => {
          if (settled) return;
          if (answered) {
            timer = setTimeout(suspect, SUSPECT_AFTER_MS).unref();
            return;
          }
          settled = true;
          abandon();
          reject(new DatabaseHungError());
        });
      };
      timer = setTimeout(suspect, SUSPECT_AFTER_MS).unref();
      const settle = () => {
        settled = true;
        clearTimeout(timer);
      };
      statement.then(
        (value) => {
          settle();
          resolve(value);
        },
        (err: unknown) => {
          settle();
          reject(err);
        },
      );
    });
  };
}
