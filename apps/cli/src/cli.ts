import {
  type Action,
  execute,
  type Io,
  PROGRAM,
  parseCommandLine,
  portableArgv,
  report,
  usage,
} from '@crm/api';
import { type Config, loadConfig } from '@crm/config';
import { askHolder, createsEmbeddedDatabase, DataDirLockedError, openDatabase } from '@crm/db';
import { serveMcpOverStdio } from './mcp-stdio.ts';

export { type Io, PROGRAM, parseCommandLine, usage };

/** What a running server answers for a command line it ran on its own database. */
type HolderAnswer = { code: number; stdout: string[]; stderr: string[] };

const isAnswer = (a: unknown): a is HolderAnswer =>
  typeof a === 'object' && a !== null && typeof (a as HolderAnswer).code === 'number';

/**
 * Runs one command line and returns the process exit code. Only the command's JSON goes to stdout.
 * While a server holds the embedded database, the server runs the command on it (over the lock's socket,
 * which only this machine's user can open) and its answer is printed as if run here.
 */
export async function run(argv: string[], env: Record<string, string | undefined>, io: Io): Promise<number> {
  // A long-running server on stdio rather than one command: it reads its own environment.
  if (argv[0] === 'mcp' && argv.length === 1) return serveMcpOverStdio(env, io);
  let action: Action;
  try {
    const parsed = parseCommandLine(argv);
    if (parsed === 'help') {
      io.stdout(usage());
      return 0;
    }
    action = parsed;
  } catch (err) {
    return report(err, io);
  }

  let db: Awaited<ReturnType<typeof openDatabase>>;
  let config: Config | undefined;
  try {
    config = loadConfig(env);
    // A mistyped CRM_DATA_DIR (or none) would otherwise answer from a new, empty database without a word.
    if (createsEmbeddedDatabase(config.database) && config.database.kind === 'pglite')
      io.stderr(
        `note: no database at ${config.database.dataDir}: creating a new, empty embedded one there ` +
          '(set CRM_DATA_DIR, or DATABASE_URL for PostgreSQL, to use an existing one)',
      );
    // Only `crm migrate` creates a PostgreSQL database that is not there (docs/cli.md: Which database a command opens).
    const createMissing =
      argv[0] === 'migrate'
        ? (which: string) => io.stderr(`note: no database ${which}: creating a new, empty one`)
        : undefined;
    db = await openDatabase(longStatements(argv[0], config.database), 'cli', { createMissing });
  } catch (err) {
    if (err instanceof DataDirLockedError && config?.database.kind === 'pglite') {
      // An import runs as long as its file takes; every other command answers within the default minute.
      const timeoutMs = argv[0] === 'import' ? 6 * 3_600_000 : undefined;
      const answer = await askHolder(config.database.dataDir, { argv: portableArgv(argv) }, timeoutMs);
      if (isAnswer(answer)) {
        for (const line of answer.stdout) io.stdout(line);
        for (const line of answer.stderr) io.stderr(line);
        return answer.code;
      }
    }
    return report(err, io);
  }
  let code = await execute(action, db.orm.em.fork(), config, io);
  try {
    await db.close();
  } catch (err) {
    const closeCode = report(err, io);
    if (code === 0) code = closeCode;
  }
  return code;
}

/** How long one statement of `crm import`, `crm migrate` or `crm schema` may run on PostgreSQL: an hour. */
const LONG_STATEMENT_MS = 3_600_000;
const LONG_COMMANDS = new Set(['import', 'migrate', 'schema']);

/**
 * The database as a command opens it: an import's closing VACUUM (ANALYZE), a migration's index builds and
 * a schema apply's checks and index of a custom field (`indexed: true`: one INSERT … SELECT of every record
 * holding a value) take as long as the tables are large (a million deals: well over the 10 s a request's
 * statement gets, and the import's statistics were left stale), so these three wait up to
 * LONG_STATEMENT_MS for a statement; every other command keeps DATABASE_QUERY_TIMEOUT_MS.
 */
function longStatements(command: string | undefined, database: Config['database']): Config['database'] {
  if (database.kind !== 'postgresql' || !LONG_COMMANDS.has(command ?? '')) return database;
  return { ...database, queryTimeoutMs: Math.max(database.queryTimeoutMs, LONG_STATEMENT_MS) };
}
