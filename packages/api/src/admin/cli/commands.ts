import { readFile } from 'node:fs/promises';
import type { Config } from '@crm/config';
import { type EntityManager, USER_ROLES, type UserRole } from '@crm/db';
import { z } from 'zod';
import { ApiError, notFound } from '../../errors.ts';
import {
  applySchema,
  exportSchema,
  parseSchemaFile,
  planSchema,
  type SchemaFile,
} from '../../features/custom-fields/schema-file.ts';
import { schemaTypes } from '../../features/custom-fields/schema-types.ts';
import { orgQuotaReport, setOrgQuota, UnknownOrganizationError } from '../../limits/org-quotas.ts';
import { orgFork, unscopedDb } from '../../org-scope.ts';
import { IMPORT_OBJECTS, type ImportObject, upsertable } from '../../record-import.ts';
import { parseScopes } from '../../scopes.ts';
import { issueApiKey, listApiKeys, listEveryApiKey, revokeApiKey, rotateApiKey } from '../api-keys.ts';
import { CLI_ACTOR } from '../audit.ts';
import {
  createOrganizationWithKey,
  deleteOrganization,
  listOrganizations,
  organizationExists,
} from '../organizations.ts';
import { createPerson, listEveryPerson, listPeople, removePerson, resetPassword } from '../people.ts';
import { CliError, UsageError } from './errors.ts';
import { runImport } from './import-command.ts';
import type { Io } from './io.ts';
import { userPath } from './paths.ts';

/** What a command prints as it is rather than as JSON (`crm schema types`: a TypeScript file). */
export class PlainText {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

/**
 * What a command does once the database is open: the JSON objects it returns are printed one per line
 * (a PlainText as it is).
 */
export type Action = (em: EntityManager, config: Config, io: Io) => Promise<unknown[]>;

type OptionSpec = { type: 'string'; required?: boolean; description: string };

export interface CommandSpec {
  /** How the command is written, e.g. `key create`. */
  name: string;
  positionals: string[];
  options: Record<string, OptionSpec>;
  summary: string;
  /** Validates the parsed arguments (throwing CliError) and returns what to run. */
  prepare(args: { positionals: string[]; options: Record<string, string | undefined> }): Action;
}

const Uuid = z.uuid();

function uuidArg(value: string, what: string): string {
  const parsed = Uuid.safeParse(value);
  if (!parsed.success) throw new CliError(`${what} must be a UUID, got ${JSON.stringify(value)}`);
  return parsed.data.toLowerCase();
}

/** A monthly quota on the command line: a whole number of calls, or `default` for the configured one. */
function quotaArg(value: string | undefined, flag: string): number | null | undefined {
  if (value === undefined) return undefined;
  if (value === 'default') return null;
  if (!/^\d{1,15}$/.test(value))
    throw new CliError(
      `${flag} must be a whole number of calls per month, or "default"; got ${JSON.stringify(value)}`,
    );
  return Number(value);
}

function scopesArg(value: string): string[] {
  try {
    return parseScopes(value);
  } catch (err) {
    throw new CliError(`--scopes: ${(err as Error).message}`);
  }
}

/** A moment ahead, as an ISO 8601 date-time with its offset (`2027-01-31T00:00:00Z`). */
function futureDateArg(value: string): Date {
  if (!z.iso.datetime({ offset: true }).safeParse(value).success)
    throw new CliError(
      `--expires-at must be a date-time with an offset, e.g. 2027-01-31T00:00:00Z; got ${JSON.stringify(value)}`,
    );
  const at = new Date(value);
  if (at.getTime() <= Date.now()) throw new CliError(`--expires-at must be in the future, got ${value}`);
  return at;
}

const DURATION_UNITS_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A duration such as `24h`, `30m`, `90s`, `7d`, or `0`. */
function durationArg(value: string, flag: string): number {
  if (value === '0') return 0;
  const match = /^(\d{1,6})([smhd])$/.exec(value);
  if (!match)
    throw new CliError(
      `${flag} must be a duration such as 24h, 30m, 90s, 7d or 0; got ${JSON.stringify(value)}`,
    );
  const ms = Number(match[1]) * (DURATION_UNITS_MS[match[2] as string] as number);
  if (ms > 365 * 86_400_000) throw new CliError(`${flag} must be at most a year (365d); got ${value}`);
  return ms;
}

/** The quota functions name a missing organization in their own error; the CLI shows it as one line. */
async function asCliError<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof UnknownOrganizationError) throw new CliError(err.message);
    throw err;
  }
}

/** The people functions speak in ApiErrors (the dashboard shares them); the CLI shows their message. */
async function asCliMessage<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof ApiError) throw new CliError(err.message);
    throw err;
  }
}

async function requireOrganization(em: EntityManager, orgId: string): Promise<void> {
  if (!(await organizationExists(em, orgId))) throw new CliError(`organization ${orgId} does not exist`);
}

/** A unit of work scoped to the organization `--org` names; a CliError when there is none. */
async function scopedToOrg(em: EntityManager, orgId: string): Promise<EntityManager> {
  await requireOrganization(em, orgId);
  return orgFork(em, orgId);
}

/**
 * A command that names a key or a person by its id alone acts in that record's organization, through the
 * same scoped code as the dashboard: a unit of work scoped to it, or undefined when no organization holds
 * the id.
 */
async function scopedToOwnerOf(
  em: EntityManager,
  table: 'api_keys' | 'users',
  id: string,
): Promise<EntityManager | undefined> {
  const owner = await unscopedDb(em, 'the CLI names a key or a person by its id alone: whose it is')
    .selectFrom(table)
    .select('org_id')
    .where('id', '=', id)
    .executeTakeFirst();
  return owner && orgFork(em, owner.org_id);
}

/** The person's organization's unit of work; a missing person is shown as the dashboard's 404 says it. */
async function personsUnitOfWork(em: EntityManager, userId: string): Promise<EntityManager> {
  const scoped = await scopedToOwnerOf(em, 'users', userId);
  if (!scoped) throw new CliError(notFound('Person').message);
  return scoped;
}

/** A schema file (`crm schema export` wrote one), read and checked; a CliError naming what is wrong. */
async function schemaFileArg(value: string | undefined): Promise<SchemaFile> {
  const file = userPath(value ?? '');
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new CliError(`cannot read ${file}: ${(err as Error).message}`);
  }
  try {
    return parseSchemaFile(text);
  } catch (err) {
    // "crm.schema.json is not JSON: …", "crm.schema.json: objects.deals[0].key: …"
    if (err instanceof ApiError)
      throw new CliError(`${file}${err.message.startsWith('not JSON') ? ' is' : ':'} ${err.message}`);
    throw err;
  }
}

const schemaCommand = (
  name: 'plan' | 'apply',
  summary: string,
  run: typeof planSchema | typeof applySchema,
): CommandSpec => ({
  name: `schema ${name}`,
  positionals: ['file'],
  options: { org: { type: 'string', required: true, description: 'org_id' } },
  summary,
  prepare({ positionals, options }) {
    const orgId = uuidArg(options.org ?? '', '--org');
    return async (em) => {
      const file = await schemaFileArg(positionals[0]);
      return [await asCliMessage(async () => run(await scopedToOrg(em, orgId), file))];
    };
  },
});

export const COMMANDS: CommandSpec[] = [
  {
    name: 'import',
    positionals: ['file'],
    options: {
      org: { type: 'string', required: true, description: 'org_id' },
      rejects: { type: 'string', description: 'file for rejected rows, default <file>.rejected.ndjson' },
      object: {
        type: 'string',
        description: `what the rows are: ${IMPORT_OBJECTS.join('|')} (default deals)`,
      },
      'upsert-on': {
        type: 'string',
        description: 'a unique custom field: a row whose value a record holds updates it',
      },
    },
    summary:
      'Import deals (and their contacts), contacts, companies or activities from a .csv or .ndjson file, with progress and a report of rejected rows',
    prepare({ positionals, options }) {
      const file = userPath(positionals[0] ?? '');
      const orgId = uuidArg(options.org ?? '', '--org');
      const rejectsPath = options.rejects ? userPath(options.rejects) : `${file}.rejected.ndjson`;
      const object = (options.object ?? 'deals') as ImportObject;
      if (!IMPORT_OBJECTS.includes(object))
        throw new CliError(
          `--object must be one of ${IMPORT_OBJECTS.join(', ')}; got ${JSON.stringify(options.object)}`,
        );
      const upsertOn = options['upsert-on'];
      if (upsertOn !== undefined && !upsertable(object))
        throw new CliError(`--upsert-on: ${object} have no custom fields, so none is unique to upsert on`);
      return async (em, _config, io) => [
        await runImport(em, { file, orgId, rejectsPath, object, upsertOn }, io),
      ];
    },
  },
  {
    name: 'schema export',
    positionals: [],
    options: { org: { type: 'string', required: true, description: 'org_id' } },
    summary: "Print the organization's custom fields as a schema file (for plan and apply)",
    prepare({ options }) {
      const orgId = uuidArg(options.org ?? '', '--org');
      return async (em) => [await exportSchema(await scopedToOrg(em, orgId))];
    },
  },
  {
    name: 'schema types',
    positionals: [],
    options: { org: { type: 'string', required: true, description: 'org_id' } },
    summary:
      "Print a TypeScript declaration of the organization's custom fields for @crm/client (createCrmClient<OrgFields>)",
    prepare({ options }) {
      const orgId = uuidArg(options.org ?? '', '--org');
      return async (em) => [
        new PlainText((await schemaTypes(await scopedToOrg(em, orgId), orgId)).trimEnd()),
      ];
    },
  },
  schemaCommand(
    'plan',
    'Show what applying a schema file would add, change and archive, and what of the data it touches',
    planSchema,
  ),
  schemaCommand(
    'apply',
    "Make the organization's custom fields what a schema file says: every step, or none",
    applySchema,
  ),
  {
    name: 'org create',
    positionals: ['name'],
    options: {},
    summary: 'Create an organization and its first API key (shown once)',
    prepare({ positionals }) {
      const name = (positionals[0] ?? '').trim();
      if (name === '') throw new CliError('the organization name must not be empty');
      return async (em) => [await createOrganizationWithKey(em, name)];
    },
  },
  {
    name: 'org list',
    positionals: [],
    options: {},
    summary: 'List organizations, one per line',
    prepare: () => (em) => listOrganizations(em),
  },
  {
    name: 'org delete',
    positionals: ['org_id'],
    options: {},
    summary:
      'Delete an organization and all its data; its keys stop working (within a second on a running server)',
    prepare({ positionals }) {
      const orgId = uuidArg(positionals[0] ?? '', 'org_id');
      return async (em) => {
        if (!(await deleteOrganization(em, orgId)))
          throw new CliError(`organization ${orgId} does not exist`);
        return [{ org_id: orgId, deleted: true }];
      };
    },
  },
  {
    name: 'org quota',
    positionals: ['org_id'],
    options: {},
    summary: "Show an organization's monthly quotas and this month's stored use",
    prepare({ positionals }) {
      const orgId = uuidArg(positionals[0] ?? '', 'org_id');
      return async (em, config) => [
        await asCliError(() => orgQuotaReport(em, orgId, config.limits.monthlyQuota)),
      ];
    },
  },
  {
    name: 'org set-quota',
    positionals: ['org_id'],
    options: {
      api: { type: 'string', description: 'calls per month|default' },
      ai: { type: 'string', description: 'AI calls per month|default' },
    },
    summary: "Set an organization's own monthly API and/or AI quota (default: back to the configured one)",
    prepare({ positionals, options }) {
      const orgId = uuidArg(positionals[0] ?? '', 'org_id');
      const change = { api_calls: quotaArg(options.api, '--api'), ai_calls: quotaArg(options.ai, '--ai') };
      if (change.api_calls === undefined && change.ai_calls === undefined)
        throw new UsageError(
          'give --api and/or --ai',
          'org set-quota <org_id> [--api <N|default>] [--ai <N|default>]',
        );
      return async (em, config) =>
        asCliError(async () => {
          await setOrgQuota(em, orgId, change);
          return [await orgQuotaReport(em, orgId, config.limits.monthlyQuota)];
        });
    },
  },
  {
    name: 'key create',
    positionals: [],
    options: {
      org: { type: 'string', required: true, description: 'org_id' },
      name: { type: 'string', description: 'label' },
      scopes: { type: 'string', description: 'deals:read,search,... or *' },
      'expires-at': { type: 'string', description: 'date-time' },
    },
    summary: 'Issue another API key for an organization (shown once), optionally narrowed and expiring',
    prepare({ options }) {
      const orgId = uuidArg(options.org ?? '', '--org');
      const label = options.name?.trim();
      if (label === '') throw new CliError('--name must not be empty');
      const scopes = options.scopes === undefined ? undefined : scopesArg(options.scopes);
      const expiresAt =
        options['expires-at'] === undefined ? undefined : futureDateArg(options['expires-at']);
      return async (em) => {
        await requireOrganization(em, orgId);
        return [await issueApiKey(em, orgId, { name: label, scopes, expiresAt })];
      };
    },
  },
  {
    name: 'key rotate',
    positionals: ['key_id'],
    options: { overlap: { type: 'string', description: 'duration, e.g. 24h (default), 30m, 0' } },
    summary:
      'Issue a successor with the same name and scopes (shown once); the old key works until the overlap ends',
    prepare({ positionals, options }) {
      const keyId = uuidArg(positionals[0] ?? '', 'key_id');
      const overlapMs = durationArg(options.overlap ?? '24h', '--overlap');
      return async (em) => {
        const scoped = await scopedToOwnerOf(em, 'api_keys', keyId);
        const rotated = scoped && (await asCliMessage(() => rotateApiKey(scoped, keyId, overlapMs)));
        if (!rotated) throw new CliError(`API key ${keyId} does not exist or is revoked`);
        return [rotated];
      };
    },
  },
  {
    name: 'key list',
    positionals: [],
    options: { org: { type: 'string', description: 'org_id' } },
    summary: 'List API keys, one per line (never the keys themselves)',
    prepare({ options }) {
      const orgId = options.org === undefined ? undefined : uuidArg(options.org, '--org');
      return async (em) => (orgId ? listApiKeys(await scopedToOrg(em, orgId)) : listEveryApiKey(em));
    },
  },
  {
    name: 'key revoke',
    positionals: ['key_id'],
    options: {},
    summary: 'Revoke an API key; it stops working (within a second on a running server)',
    prepare({ positionals }) {
      const keyId = uuidArg(positionals[0] ?? '', 'key_id');
      return async (em) => {
        const scoped = await scopedToOwnerOf(em, 'api_keys', keyId);
        if (!scoped || !(await revokeApiKey(scoped, keyId)))
          throw new CliError(`API key ${keyId} does not exist`);
        return [{ key_id: keyId, revoked: true }];
      };
    },
  },
  {
    name: 'user create',
    positionals: [],
    options: {
      org: { type: 'string', required: true, description: 'org_id' },
      email: { type: 'string', required: true, description: 'email' },
      role: { type: 'string', description: 'admin|member' },
      name: { type: 'string', description: 'display name' },
    },
    summary: 'Add a person who signs in to the dashboard; prints a generated password once',
    prepare({ options }) {
      const orgId = uuidArg(options.org ?? '', '--org');
      const role = (options.role ?? 'admin') as UserRole;
      if (!USER_ROLES.includes(role))
        throw new CliError(`--role must be admin or member, got ${JSON.stringify(options.role)}`);
      const email = options.email ?? '';
      return async (em) => {
        const created = await asCliMessage(() =>
          createPerson(
            em,
            { orgId, email, role, ...(options.name ? { name: options.name } : {}) },
            { actor: CLI_ACTOR },
          ),
        );
        return [
          { user_id: created.user_id, email: created.email, role: created.role, password: created.password },
        ];
      };
    },
  },
  {
    name: 'user list',
    positionals: [],
    options: { org: { type: 'string', description: 'org_id' } },
    summary: 'List people, one per line (never their passwords)',
    prepare({ options }) {
      const orgId = options.org === undefined ? undefined : uuidArg(options.org, '--org');
      return async (em) => (orgId ? listPeople(await scopedToOrg(em, orgId)) : listEveryPerson(em));
    },
  },
  {
    name: 'user remove',
    positionals: ['user_id'],
    options: {},
    summary: 'Remove a person and end their sessions (not the last admin of an organization)',
    prepare({ positionals }) {
      const userId = uuidArg(positionals[0] ?? '', 'user_id');
      return async (em) => {
        const scoped = await personsUnitOfWork(em, userId);
        const removed = await asCliMessage(() => removePerson(scoped, userId, { actor: CLI_ACTOR }));
        return [{ user_id: removed.user_id, email: removed.email, removed: true }];
      };
    },
  },
  {
    name: 'user reset-password',
    positionals: ['user_id'],
    options: {},
    summary: 'Give a person a new generated password (printed once) and end their sessions',
    prepare({ positionals }) {
      const userId = uuidArg(positionals[0] ?? '', 'user_id');
      return async (em) => {
        const scoped = await personsUnitOfWork(em, userId);
        return [await asCliMessage(() => resetPassword(scoped, userId, { actor: CLI_ACTOR }))];
      };
    },
  },
  {
    name: 'migrate',
    positionals: [],
    options: {},
    summary: 'Bring the database schema up to date',
    // Opening the database runs the pending migrations; nothing is left to do.
    prepare: () => async () => [{ migrated: true }],
  },
];

/** `key create --org <org_id> [--name <label>]` */
export function synopsis(command: CommandSpec): string {
  const parts = [command.name, ...command.positionals.map((p) => `<${p}>`)];
  for (const [flag, spec] of Object.entries(command.options)) {
    const option = `--${flag} <${spec.description}>`;
    parts.push(spec.required ? option : `[${option}]`);
  }
  return parts.join(' ');
}

export function findCommand(words: string[]): { command: CommandSpec; rest: string[] } {
  const [first, second] = words;
  const single = COMMANDS.find((c) => c.name === first);
  if (single) return { command: single, rest: words.slice(1) };
  const group = COMMANDS.filter((c) => c.name.startsWith(`${first} `));
  if (group.length === 0) throw new UsageError(`unknown command ${JSON.stringify(first)}`);
  const actions = group.map((c) => c.name.split(' ')[1]).join(', ');
  if (second === undefined || second.startsWith('-')) {
    throw new UsageError(`"${first}" needs a subcommand: ${actions}`);
  }
  const command = group.find((c) => c.name === `${first} ${second}`);
  if (!command) throw new UsageError(`unknown command "${first} ${second}" (expected one of: ${actions})`);
  return { command, rest: words.slice(2) };
}
