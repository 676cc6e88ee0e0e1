import { parseArgs } from 'node:util';
import { type Config, ConfigError, loadConfig } from '@crm/config';
import { createsEmbeddedDatabase, DataDirLockedError, openDatabase } from '@crm/db';
import { type Action, COMMANDS, type CommandSpec, findCommand, synopsis } from './commands.ts';
import { CliError, UsageError } from './errors.ts';

export const PROGRAM = 'npm run --silent crm --';

export interface Io {
  stdout(line: string): void;
  stderr(line: string): void;
}

export function usage(): string {
  const rows = COMMANDS.map((c) => [synopsis(c), c.summary] as const);
  rows.push(['help', 'Show this help']);
  const width = Math.max(...rows.map(([s]) => s.length)) + 2;
  return [
    `Usage: ${PROGRAM} <command> [options]`,
    '',
    'Commands:',
    ...rows.map(([s, summary]) => `  ${s.padEnd(width)}${summary}`),
    '',
    'Output is one JSON object per line on stdout; errors go to stderr (exit 1, or 2 for a wrong command line).',
    'API keys are printed once, when they are created: store them right away.',
    'The database is PostgreSQL when DATABASE_URL is set, else the embedded one in CRM_DATA_DIR,',
    'which only one process can open at a time (stop the server first).',
  ].join('\n');
}

const isHelp = (word: string | undefined) => word === 'help' || word === '--help' || word === '-h';

/** Turns the command line into what to run, or 'help'. Throws UsageError or CliError; touches no database. */
export function parseCommandLine(argv: string[]): Action | 'help' {
  const [first] = argv;
  if (first === undefined || isHelp(first)) return 'help';
  if (first.startsWith('-')) throw new UsageError(`unknown option ${JSON.stringify(first)}`);
  const { command, rest } = findCommand(argv);
  return parseCommand(command, rest);
}

function parseCommand(command: CommandSpec, args: string[]): Action | 'help' {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = {
    help: { type: 'boolean', short: 'h' },
  };
  for (const flag of Object.keys(command.options)) options[flag] = { type: 'string' };
  let parsed: { values: Record<string, string | boolean | undefined>; positionals: string[] };
  try {
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (err) {
    // Node's own wording for an unknown option is long-winded; the rest of its messages read fine.
    const unknown = /^Unknown option '([^']+)'/.exec((err as Error).message);
    const message = unknown ? `unknown option ${unknown[1]}` : (err as Error).message;
    throw new UsageError(message, synopsis(command));
  }
  const values = parsed.values;
  if (values.help === true) return 'help';

  const { positionals } = parsed;
  const missing = command.positionals.slice(positionals.length);
  if (missing.length > 0) {
    throw new UsageError(`missing argument ${missing.map((m) => `<${m}>`).join(' ')}`, synopsis(command));
  }
  if (positionals.length > command.positionals.length) {
    const extra = positionals.slice(command.positionals.length).map((p) => JSON.stringify(p));
    const hint = command.positionals.length > 0 ? ' (quote values that contain spaces)' : '';
    throw new UsageError(`unexpected argument ${extra.join(' ')}${hint}`, synopsis(command));
  }
  const stringOptions: Record<string, string | undefined> = {};
  for (const [flag, spec] of Object.entries(command.options)) {
    const value = values[flag];
    if (typeof value === 'string') stringOptions[flag] = value;
    else if (spec.required)
      throw new UsageError(`missing option --${flag} <${spec.description}>`, synopsis(command));
  }
  return command.prepare({ positionals, options: stringOptions });
}

/** Errors a user causes or can fix: one line is the whole story, a stack trace would only get in the way. */
function isExpected(err: unknown): boolean {
  if (err instanceof CliError || err instanceof DataDirLockedError || err instanceof ConfigError) return true;
  // System and driver errors (ECONNREFUSED, a PostgreSQL SQLSTATE, ...) say what is wrong in their message.
  return err instanceof Error && typeof (err as { code?: unknown }).code === 'string';
}

function report(err: unknown, io: Io): number {
  if (err instanceof UsageError) {
    io.stderr(`error: ${err.message}`);
    if (err.synopsis) io.stderr(`usage: ${PROGRAM} ${err.synopsis}`);
    io.stderr(`Run "${PROGRAM} help" for all commands.`);
    return 2;
  }
  const message = err instanceof Error ? err.message : String(err);
  io.stderr(`error: ${message.split('\n')[0]}`);
  if (!isExpected(err) && err instanceof Error && err.stack) io.stderr(err.stack);
  return 1;
}

/** Runs one command line and returns the process exit code. Only the command's JSON goes to stdout. */
export async function run(argv: string[], env: Record<string, string | undefined>, io: Io): Promise<number> {
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
  let config: Config;
  try {
    config = loadConfig(env);
    // A mistyped CRM_DATA_DIR (or none) would otherwise answer from a new, empty database without a word.
    if (createsEmbeddedDatabase(config.database) && config.database.kind === 'pglite')
      io.stderr(
        `note: no database at ${config.database.dataDir}: creating a new, empty embedded one there ` +
          '(set CRM_DATA_DIR, or DATABASE_URL for PostgreSQL, to use an existing one)',
      );
    db = await openDatabase(config.database, 'cli');
  } catch (err) {
    return report(err, io);
  }
  let code = 0;
  try {
    // Printed before closing: a key that was created must reach the user even if closing fails.
    for (const row of await action(db.orm.em.fork(), config)) io.stdout(JSON.stringify(row));
  } catch (err) {
    code = report(err, io);
  } finally {
    try {
      await db.close();
    } catch (err) {
      const closeCode = report(err, io);
      if (code === 0) code = closeCode;
    }
  }
  return code;
}
