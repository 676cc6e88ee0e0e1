import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import type { Config } from '@crm/config';
import { PGlite } from '@electric-sql/pglite';
import { btree_gin } from '@electric-sql/pglite/contrib/btree_gin';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import { type Options, TransactionPropagation } from '@mikro-orm/core';
import { Migrator } from '@mikro-orm/migrations';
import { MikroORM as PgliteMikroORM } from '@mikro-orm/pglite';
import { MikroORM as PostgreSqlMikroORM } from '@mikro-orm/postgresql';
import type { AbstractSqlDriver, InferKyselyDB, Kysely, MikroORM, SqlEntityManager } from '@mikro-orm/sql';
import { entities } from './entities.ts';
import { DATABASE_PROBE_TIMEOUT_MS, watchHangs } from './hang-watch.ts';
import type { KeptColumns, KeptTables } from './kept-tables.ts';
import { migrationsList } from './migrations/index.ts';

export type Orm = MikroORM<AbstractSqlDriver, SqlEntityManager>;
export type EntityManager = SqlEntityManager;
export type DatabaseConfig = Config['database'];

/**
 * The PostgreSQL database `DATABASE_URL` names is not on its server (a mistyped name, or one nobody made):
 * only `crm migrate` creates it, as a new empty one would otherwise stand in for the real one unnoticed.
 */
export class MissingDatabaseError extends Error {
  override name = 'MissingDatabaseError';
}

/** Who opened an embedded data directory; written beside the lock so the next opener can say who holds it. */
type Holder = { pid: number; host?: string; role: string; since: string };

export class DataDirLockedError extends Error {
  override name = 'DataDirLockedError';
  /** Who holds it, as it wrote beside the lock (undefined when that could not be read). */
  readonly holder: Holder | undefined;
  constructor(message: string, holder?: Holder) {
    super(message);
    this.holder = holder;
  }
}

/** A request a process makes of the embedded database's holder, and its answer (JSON, one line each). */
export type LocalRequestHandler = (request: unknown) => Promise<unknown>;

export interface Database {
  orm: Orm;
  /** Closes the ORM (flushing PGlite to disk) and releases the data directory. */
  close(): Promise<void>;
  /**
   * Embedded only: answers other processes of this machine's user that find the database held (the CLI)
   * on the lock's socket, with this process's database.
   */
  serveLocalRequests(handler: LocalRequestHandler): void;
}

/** The lock's socket of an embedded data directory (see `lockDataDir`). */
export function lockSocketPath(dataDir: string): string {
  const beside = `${path.resolve(dataDir, 'pglite')}.lock.sock`;
  // A Unix socket's path holds about 107 bytes: a deeper data directory gets its socket in the temporary
  // folder, named after the directory, so every process still finds the same one.
  if (Buffer.byteLength(beside) <= 100) return beside;
  const name = createHash('sha256').update(beside).digest('hex').slice(0, 24);
  return path.join(tmpdir(), `crm-${name}.lock.sock`);
}

/** How long the holder waits for a connection's request line before closing it. */
const REQUEST_WAIT_MS = 5_000;
/** How long a holder has to greet a connection before it is taken to serve nothing. */
const GREETING_TIMEOUT_MS = 2_000;

/**
 * Sends one request to the process that holds the embedded database at `dataDir`, and returns its
 * answer, or undefined when it serves no requests or nobody holds it. The holder greets every
 * connection with one line saying whether it serves requests; only then is the request sent.
 */
export function askHolder(dataDir: string, request: unknown, timeoutMs = 60_000): Promise<unknown> {
  return new Promise((resolve) => {
    const socket = connect(lockSocketPath(dataDir));
    let received = '';
    let greeted = false;
    let settled = false;
    const done = (value: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(value);
    };
    let timer = setTimeout(() => done(undefined), GREETING_TIMEOUT_MS);
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      received += chunk;
      if (!greeted) {
        const end = received.indexOf('\n');
        if (end < 0) return;
        greeted = true;
        const greeting = received.slice(0, end);
        received = received.slice(end + 1);
        if (greeting !== SERVES) return done(undefined);
        clearTimeout(timer);
        timer = setTimeout(() => done(undefined), timeoutMs);
        socket.write(`${JSON.stringify(request)}\n`);
        return;
      }
      const end = received.indexOf('\n');
      if (end < 0) return;
      try {
        done(JSON.parse(received.slice(0, end)));
      } catch {
        done(undefined);
      }
    });
    socket.once('error', () => done(undefined));
    socket.once('close', () => done(undefined));
  });
}

const SERVES = 'serves requests';
const SERVES_NOTHING = 'serves nothing';

function baseOptions(): Partial<Options> {
  return {
    entities,
    extensions: [Migrator],
    migrations: { migrationsList, snapshot: false, silent: true, transactional: true, allOrNothing: true },
    allowGlobalContext: false,
    forceUtcTimezone: true,
    ignoreUndefinedInQuery: true,
    // A row's relations always belong to its own organization (services check that on write), so the
    // org filter on the queried table is enough: joining every reference just to filter it again
    // turned a 2 ms count into a three-table join.
    autoJoinRefsForFilters: false,
    debug: false,
  };
}

const isMemory = (dataDir: string) => dataDir.startsWith('memory:');

/**
 * A Blob MikroORM hands to PGlite as it is: it deep-copies driverOptions, and a copied Blob has lost its
 * bytes ("Illegal invocation" on read); an object with a `clone()` is copied by calling it. Blobs are immutable.
 */
function uncloned(blob: Blob): Blob {
  const kept = new Blob([blob], { type: blob.type });
  return Object.assign(kept, { clone: () => kept });
}

function readHolder(holderFile: string): Holder | undefined {
  try {
    return JSON.parse(readFileSync(holderFile, 'utf8')) as Holder;
  } catch {
    return undefined;
  }
}

/** A takeover folder left by an opener that died in the middle of one (it takes milliseconds) is removed. */
function rmStaleTakeover(folder: string): void {
  try {
    if (Date.now() - statSync(folder).mtimeMs > 10_000) rmSync(folder, { recursive: true, force: true });
  } catch {
    // Gone already.
  }
}

/** Whether a process listens on the socket: connected means held; refused or missing means free. */
function someoneListens(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = connect(socketPath);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
}

function listenOn(server: Server, socketPath: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/**
 * PGlite is one process's database: a second process opening the same folder would corrupt it. The lock
 * is a Unix socket the holder listens on beside the cluster: it dies with its process (kill -9, a crash,
 * a container's pid 1 restarted with the same pid), so the next opener takes over at once, and a live
 * holder is recognised by answering a connection, never by a pid that may have been reused. The second
 * opener fails with a message naming the holder.
 */
async function lockDataDir(
  clusterDir: string,
  role: string,
): Promise<{ release: () => Promise<void>; serve: (handler: LocalRequestHandler) => void }> {
  mkdirSync(path.dirname(clusterDir), { recursive: true });
  const socketPath = lockSocketPath(path.dirname(clusterDir));
  const holderFile = `${clusterDir}.holder.json`;
  let handler: LocalRequestHandler | undefined;
  // A connection is a liveness probe (closed at once) or, once this process serves requests, one request.
  const connections = new Set<Socket>();
  const server = createServer((socket) => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
    socket.on('error', () => socket.destroy());
    // A client that connects and says nothing (a suspended `crm`, a stray `nc -U`) is not waited for.
    socket.setTimeout(REQUEST_WAIT_MS, () => socket.destroy());
    if (!handler) {
      socket.end(`${SERVES_NOTHING}\n`);
      return;
    }
    const serve = handler;
    socket.write(`${SERVES}\n`);
    let line = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      line += chunk;
      if (!line.includes('\n')) return;
      socket.pause();
      socket.setTimeout(0); // the command itself may take as long as it takes
      let request: unknown;
      try {
        request = JSON.parse(line.slice(0, line.indexOf('\n')));
      } catch {
        socket.end();
        return;
      }
      serve(request).then(
        (answer) => socket.end(`${JSON.stringify(answer)}\n`),
        () => socket.end(),
      );
    });
  });
  try {
    await listenOn(server, socketPath);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    if (await someoneListens(socketPath)) {
      const holder = readHolder(holderFile);
      const who = holder
        ? `the ${holder.role} (pid ${holder.pid}, since ${holder.since})`
        : 'another process';
      throw new DataDirLockedError(
        `The embedded database at ${path.dirname(clusterDir)} is in use by ${who}. ` +
          'Stop it first, or point both at PostgreSQL with DATABASE_URL.',
        holder,
      );
    }
    // Left by a process that died: nobody answers on it. Two openers may find that at once; only the one
    // that creates the takeover folder (atomic) replaces the socket, the other tries again from the start.
    const takeover = `${socketPath}.takeover`;
    try {
      mkdirSync(takeover);
    } catch {
      rmStaleTakeover(takeover);
      await new Promise((resolve) => setTimeout(resolve, 200));
      return lockDataDir(clusterDir, role);
    }
    try {
      if (await someoneListens(socketPath)) return lockDataDir(clusterDir, role);
      rmSync(socketPath, { force: true });
      await listenOn(server, socketPath);
    } finally {
      rmSync(takeover, { recursive: true, force: true });
    }
  }
  chmodSync(socketPath, 0o600);
  const holder: Holder = { pid: process.pid, host: hostname(), role, since: new Date().toISOString() };
  writeFileSync(holderFile, JSON.stringify(holder));
  // The socket must not keep a CLI run alive once its work is done.
  server.unref();
  return {
    release: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Closing waits for open connections: none may hold up a shutdown.
        for (const socket of connections) socket.destroy();
      }),
    serve: (h) => {
      handler = h;
    },
  };
}

/** What is used of a `pg` pool and its clients: the client class it connects with, and its connection options. */
type PgPool = {
  on(event: 'connect', listener: (client: PgClient) => void): void;
  Client: new (options: object) => PgClient;
  options: object;
};
type PgClient = {
  query: (...args: unknown[]) => unknown;
  connect(): Promise<unknown>;
  end(): Promise<void>;
  on(event: 'error', listener: (err: Error) => void): unknown;
  _queryable: boolean;
};

/** SQL text -> the name of its server-side prepared statement, for the statements `reusePlan` was given. */
const planNames = new Map<string, string>();

/**
 * Lets PostgreSQL keep this statement parsed, and its plan, on each connection (a named prepared
 * statement): the next runs send only its parameters. For statements whose best plan does not depend on
 * their values (a row by its id, an insert): on a deal's detail, parsing and planning took 0.67 of the
 * statement's 0.9 ms. PostgreSQL plans each of the first five runs for their values, then keeps a generic
 * plan if it costs no more. Not for a `%term%` match or anything whose plan should follow its values.
 * The embedded database runs every statement as it comes.
 */
export function reusePlan(sql: string): void {
  if (!planNames.has(sql))
    planNames.set(sql, `crm_${createHash('sha1').update(sql).digest('hex').slice(0, 20)}`);
}

/**
 * A prepared statement the connection can no longer run: a migration changed the type of a column it
 * returns (`cached plan must not change result type`), or the server forgot it (`DISCARD ALL`, a pooler
 * that switched server connections).
 */
const STALE_PREPARED = /cached plan must not change result type|prepared statement .* does not exist/;

/**
 * Each pooled connection's `query`, wrapped:
 * - A statement given to `reusePlan` runs as a named prepared statement (unless `prepared` is off). One
 *   the connection can no longer run is sent again as plain SQL (which fails too inside a transaction,
 *   aborted by the first error), and the connection is then marked unusable: the pool closes it when it
 *   comes back, and a fresh one prepares the statement anew.
 * - A statement that timed out on the client may still be queued or running on the server, and pg keeps
 *   the connection open: handed back to the pool, a later request could find the server answering the
 *   old statement, or still inside the old request's transaction. Such a connection is marked unusable,
 *   as is the connection of a request's statement abandoned because the database hangs (`watchHangs`).
 */
const wrapPooledQueries =
  (prepared: boolean) =>
  (pool: PgPool): void => {
    const watch = watchHangs(probeOf(pool));
    pool.on('connect', (client) => {
      const query = client.query.bind(client);
      client.query = (...args: unknown[]) => {
        const name =
          prepared && args.length === 2 && typeof args[0] === 'string' ? planNames.get(args[0]) : undefined;
        let result = name ? query({ name, text: args[0], values: args[1] }) : query(...args);
        if (name && result instanceof Promise)
          result = result.catch((err: unknown) => {
            if (!(err instanceof Error) || !STALE_PREPARED.test(err.message)) throw err;
            return (query(args[0], args[1]) as Promise<unknown>).finally(() => {
              client._queryable = false;
            });
          });
        if (!(result instanceof Promise)) return result;
        result.catch((err: unknown) => {
          if (err instanceof Error && /Query read timeout/.test(err.message)) client._queryable = false;
        });
        return watch(result, () => {
          client._queryable = false;
        });
      };
    });
  };

/**
 * Whether the database answers `select 1` on a connection of its own (a pooled one may be what hangs, or
 * all be taken) within DATABASE_PROBE_TIMEOUT_MS. Any answer counts, an error too (refused, too many
 * connections, shutting down): only silence is a hang.
 */
const probeOf = (pool: PgPool) => (): Promise<boolean> =>
  new Promise((resolve) => {
    const options = Object.assign(Object.create(pool.options) as object, {
      connectionTimeoutMillis: DATABASE_PROBE_TIMEOUT_MS,
      query_timeout: DATABASE_PROBE_TIMEOUT_MS,
      application_name: 'crm hang probe',
    });
    const client = new pool.Client(options);
    client.on('error', () => undefined);
    let done = false;
    const finish = (answered: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(answered);
      // Closed at once, not politely: a hung server would never acknowledge.
      client._queryable = false;
      client.end().catch(() => undefined);
    };
    const timer = setTimeout(() => finish(false), DATABASE_PROBE_TIMEOUT_MS);
    client
      .connect()
      .then(() => client.query('select 1'))
      .then(
        () => finish(true),
        (err: unknown) => finish(!/timeout/i.test((err as Error).message)),
      );
  });

/** Whether opening `database` will create a new, empty embedded database (nothing in its data directory yet). */
export function createsEmbeddedDatabase(database: DatabaseConfig): boolean {
  return (
    database.kind === 'pglite' &&
    !isMemory(database.dataDir) &&
    !existsSync(path.join(database.dataDir, 'pglite', 'PG_VERSION'))
  );
}

/**
 * Opens the configured database and brings its schema up to date. `role` names the opener
 * (server, cli, test) in the message another opener of the same embedded directory gets. `upTo` stops
 * at a named migration (tests of what a later migration does to the data already there). A PostgreSQL
 * database that does not exist is created only when `createMissing` is given (told which first);
 * otherwise opening fails with a MissingDatabaseError. An embedded one is always created (docs/cli.md: Which database a command opens).
 */
export async function openDatabase(
  database: DatabaseConfig,
  role: string,
  options: { upTo?: string; createMissing?: (which: string) => void } = {},
): Promise<Database> {
  let release: (() => Promise<void>) | undefined;
  let serve: ((handler: LocalRequestHandler) => void) | undefined;
  let orm: Orm;
  if (database.kind === 'pglite') {
    const clusterDir = isMemory(database.dataDir) ? database.dataDir : path.join(database.dataDir, 'pglite');
    // An image only ever seeds a new database, never one that is there already.
    const image =
      database.image && (isMemory(clusterDir) || createsEmbeddedDatabase(database))
        ? database.image
        : undefined;
    if (!isMemory(clusterDir)) ({ release, serve } = await lockDataDir(clusterDir, role));
    try {
      orm = (await PgliteMikroORM.init({
        ...baseOptions(),
        dbName: clusterDir,
        driverOptions: {
          extensions: { pg_trgm, btree_gin },
          ...(image ? { loadDataDir: uncloned(image) } : {}),
        },
      })) as unknown as Orm;
    } catch (err) {
      await release?.();
      throw err;
    }
  } else {
    orm = (await PostgreSqlMikroORM.init({
      ...baseOptions(),
      clientUrl: database.url,
      pool: { min: 0, max: database.poolMax },
      // Not on connect: whether a missing database is created is the caller's (requirePostgresDatabase).
      ensureDatabase: false,
      // A database that hangs must not hang every request: connecting and waiting for a pooled connection
      // give up after the connect timeout, a statement after the query timeout, on the server
      // (statement_timeout) and on the client too (query_timeout), which holds when the server answers nothing.
      driverOptions: {
        connectionTimeoutMillis: database.connectTimeoutMs,
        statement_timeout: database.queryTimeoutMs,
        query_timeout: database.queryTimeoutMs + 1_000,
        keepAlive: true,
        // No JIT compilation: it pays off for statements that run for seconds; this service's run for
        // milliseconds, and a plan estimated above jit_above_cost (search's one statement at a million
        // deals) spent 150 ms compiling for a 10 ms run (docs/development.md, issue 33). No parallel
        // workers unless configured: a request's statement stops at its page, and a walk split among
        // workers waited for each of them to start and to give a first row (two words at a million deals:
        // 250-400 ms with them, 37-55 without).
        options: `-c jit=off -c max_parallel_workers_per_gather=${database.parallelWorkers ?? 0}`,
        onPoolCreated: wrapPooledQueries(database.preparedStatements ?? true),
      },
    })) as unknown as Orm;
  }
  try {
    if (database.kind === 'postgresql')
      await requirePostgresDatabase(orm, database.url, options.createMissing);
    await orm.migrator.up(options.upTo ? { to: options.upTo } : undefined);
  } catch (err) {
    await orm.close(true);
    await release?.();
    throw err;
  }
  const maintenance = database.kind === 'pglite' ? await startEmbeddedMaintenance(orm) : undefined;
  return {
    orm,
    serveLocalRequests(handler) {
      serve?.(handler);
    },
    async close() {
      maintenance?.stop();
      await orm.close(true);
      await release?.();
    },
  };
}

/**
 * Fails with a MissingDatabaseError, naming it, when the database `url` names does not exist, unless
 * `create` is given: then it is told which (`"crm" on PostgreSQL at db:5432`) and the database is
 * created. MikroORM's migrator would otherwise create it silently (`ensureDatabase`), whatever the command.
 */
async function requirePostgresDatabase(
  orm: Orm,
  url: string,
  create?: (which: string) => void,
): Promise<void> {
  try {
    await orm.em.getConnection().execute('select 1');
    return;
  } catch (err) {
    if ((err as { code?: unknown }).code !== '3D000') throw err; // invalid_catalog_name: no such database
  }
  const which = `"${orm.config.get('dbName')}" on PostgreSQL at ${new URL(url).host}`;
  if (!create)
    throw new MissingDatabaseError(
      `no database ${which} (DATABASE_URL): check its name, or create it with \`npm run crm -- migrate\``,
    );
  create(which);
  await orm.schema.ensureDatabase();
}

/**
 * An empty embedded database with every migration applied, as a data directory image for the `image` of
 * an in-memory database's configuration: starting from it skips PGlite's cluster creation and the
 * migrations (0.3 s instead of 1.9 s of CPU). `settings` are written into the image's configuration
 * (ALTER SYSTEM), so every database started from it runs with them.
 */
export async function migratedEmbeddedImage(settings: Record<string, string> = {}): Promise<Blob> {
  const pglite = await PGlite.create('memory://', { extensions: { pg_trgm, btree_gin } });
  try {
    const orm = await PgliteMikroORM.init({
      ...baseOptions(),
      dbName: 'memory://',
      driverOptions: { pglite },
    });
    try {
      await orm.migrator.up();
    } finally {
      await orm.close(true);
    }
    for (const [name, value] of Object.entries(settings)) {
      if (!/^[a-z_]+$/.test(name)) throw new Error(`not a setting's name: ${name}`);
      await pglite.query(`alter system set ${name} = '${value.replace(/'/g, "''")}'`);
    }
    return await pglite.dumpDataDir('none');
  } finally {
    await pglite.close();
  }
}

/** How often the embedded database refreshes its planner statistics and reclaims dead rows. */
export const EMBEDDED_MAINTENANCE_INTERVAL_MS = 10 * 60_000;

/**
 * PGlite has no autovacuum daemon: without this its planner never learns table sizes and picks
 * plans that sort a whole table (a 50-deal page took 55 ms instead of 4 ms at 10,000 deals).
 * Statistics are refreshed on open and, with dead rows reclaimed, every ten minutes after.
 */
async function startEmbeddedMaintenance(orm: Orm): Promise<{ stop(): void }> {
  const connection = orm.em.getConnection();
  await connection.execute('analyze');
  const timer = setInterval(() => {
    connection.execute('vacuum (analyze)').catch((err: unknown) => {
      process.emitWarning(`embedded database maintenance failed: ${(err as Error).message}`);
    });
  }, EMBEDDED_MAINTENANCE_INTERVAL_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

type EntityTables = InferKyselyDB<(typeof entities)[number]>;

/**
 * The schema as Kysely sees it: inferred from the entity definitions (table and column names), with what
 * the database keeps by itself (no entity maps it).
 */
export type Tables = Omit<EntityTables, keyof KeptColumns> & {
  [T in keyof KeptColumns]: EntityTables[T] & KeptColumns[T];
} & KeptTables;

/**
 * A typed SQL builder on the unit of work's connection (inside `em.transactional`, on its transaction).
 * For hot paths where hydrating or tracking entities would cost more than the query itself.
 */
export function sqlOf(em: EntityManager): Kysely<Tables> {
  return em.getKysely<Tables>();
}

/**
 * Runs `fn` in a transaction: the caller's, when one is open on `em` (a request is one transaction), else
 * a new one. Services that write more than one statement wrap their work in this; a single statement is
 * atomic on its own and needs no BEGIN/COMMIT round trips.
 */
export function transaction<T>(em: EntityManager, fn: (tx: EntityManager) => Promise<T>): Promise<T> {
  return em.transactional(fn, { propagation: TransactionPropagation.REQUIRED });
}

/**
 * Runs `fn` in a savepoint of the caller's transaction: a failure of `fn` undoes its own writes only, and
 * the transaction goes on (an import rejects one row of a chunk and commits the others).
 */
export function savepoint<T>(em: EntityManager, fn: (tx: EntityManager) => Promise<T>): Promise<T> {
  return em.transactional(fn, { propagation: TransactionPropagation.NESTED });
}
