import { parseArgs } from 'node:util';
import { type Config, ConfigError } from '@crm/config';
import { DataDirLockedError, type EntityManager, MissingDatabaseError } from '@crm/db';
import { type Action, COMMANDS, type CommandSpec, findCommand, PlainText, synopsis } from './commands.ts';
import { CliError, UsageError } from './errors.ts';
import type { Io } from './io.ts';
import { userPath } from './paths.ts';

/**
 * The admin command line, apart from where it runs: `crm` parses and runs it on a database it opens, and
 * a running embedded server runs it for a `crm` that finds the database held (over the lock's socket).
 */
export const PROGRAM = 'npm run --silent crm --';

export function usage(): string {
  const rows = COMMANDS.map((c) => [synopsis(c), c.summary] as const);
  rows.push(['mcp', 'MCP server on stdio for AI agents, acting with CRM_API_KEY (CRM_URL: a remote server)']);
  rows.push(['help', 'Show this help']);
  const width = Math.max(...rows.map(([s]) => s.length)) + 2;
  return [
    `Usage: ${PROGRAM} <command> [options]`,
    '',
    'Commands:',
    ...rows.map(([s, summary]) => `  ${s.padEnd(width)}${summary}`),
    '',
    'Output is one JSON object per line on stdout (schema types: TypeScript); errors go to stderr (exit 1, or 2 for a wrong command line).',
    'API keys are printed once, when they are created: store them right away.',
    'The database is PostgreSQL when DATABASE_URL is set, else the embedded one in CRM_DATA_DIR;',
    'while a server holds the embedded one, the command is run by that server.',
  ].join('\n');
}

/**
 * The command line as another process (the server holding the embedded database) must read it: the
 * file paths of `import` made absolute, since that process has its own working directory.
 */
/** The options of `import` whose values are no file paths. */
const NOT_PATHS = new Set(['--org', '--object', '--upsert-on']);

export function portableArgv(argv: string[]): string[] {
  if (argv[0] !== 'import') return argv;
  return argv.map((word, i) => {
    if (word.startsWith('--rejects=')) return `--rejects=${userPath(word.slice('--rejects='.length))}`;
    return i === 0 || word.startsWith('-') || NOT_PATHS.has(argv[i - 1] ?? '') ? word : userPath(word);
  });
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
  if (
    err instanceof CliError ||
    err instanceof DataDirLockedError ||
    err instanceof MissingDatabaseError ||
    err instanceof ConfigError
  )
    return true;
  // System and driver errors (ECONNREFUSED, a PostgreSQL SQLSTATE, ...) say what is wrong in their message.
  return err instanceof Error && typeof (err as { code?: unknown }).code === 'string';
}

/** Prints an error as the CLI shows it and returns the exit code. */
export function report(err: unknown, io: Io): number {
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

/** Runs a parsed command on an open database; its JSON lines go to stdout. Returns the exit code. */
export async function execute(action: Action, em: EntityManager, config: Config, io: Io): Promise<number> {
  try {
    // Each row is printed as soon as the command returns: a key that was created must reach the user.
    for (const row of await action(em, config, io))
      io.stdout(row instanceof PlainText ? row.text : JSON.stringify(row));
    return 0;
  } catch (err) {
    return report(err, io);
  }
}

/** A whole command line on an open database (what a server runs for a `crm` beside it). */
export async function runCommandLine(
  argv: string[],
  em: EntityManager,
  config: Config,
): Promise<{ code: number; stdout: string[]; stderr: string[] }> {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const io: Io = { stdout: (l) => stdout.push(l), stderr: (l) => stderr.push(l) };
  let code: number;
  try {
    const action = parseCommandLine(argv);
    if (action === 'help') {
      io.stdout(usage());
      code = 0;
    } else code = await execute(action, em, config, io);
  } catch (err) {
    code = report(err, io);
  }
  return { code, stdout, stderr };
}
