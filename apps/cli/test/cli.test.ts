import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { portableArgv } from '@crm/api';
import { openDatabase } from '@crm/db';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crmProcess, type ProcessResult } from './cli-process.ts';
import { type CliResult, crm as runCli } from './crm.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Each CLI run opens the database (PGlite takes seconds), so tests get plenty of time. */
const SLOW = { timeout: 60_000 };

type Database = { CRM_DATA_DIR: string } | { DATABASE_URL: string };

/** Runs the CLI in this process, as `npm run --silent crm -- ...` would, against the given database only. */
function crm(database: Database, ...args: string[]): Promise<CliResult> {
  return runCli({ LOG_LEVEL: 'silent', ...database }, ...args);
}

/**
 * Runs the real `node apps/cli/src/main.ts`, for the few tests about the process itself: what it
 * writes and its exit code, and a data directory held by another process.
 */
function crmProcessOn(database: Database, ...args: string[]): Promise<ProcessResult> {
  const env: NodeJS.ProcessEnv = { ...process.env, ...database };
  if (!('DATABASE_URL' in database)) delete env.DATABASE_URL;
  return crmProcess(args, { env });
}

function freshDataDir(): string {
  return mkdtempSync(path.join(tmpdir(), 'crm-cli-test-'));
}

/** org create, key create, revoke, list: what an admin does by hand, checked as they would see it. */
async function roundTrip(db: Database): Promise<void> {
  const created = await crm(db, 'org', 'create', 'Acme Inc');
  // The first command on an empty data directory says it creates a new database there, and only then.
  expect(created.stderr).toBe(
    'CRM_DATA_DIR' in db
      ? `note: no database at ${db.CRM_DATA_DIR}: creating a new, empty embedded one there (set CRM_DATA_DIR, or DATABASE_URL for PostgreSQL, to use an existing one)\n`
      : '',
  );
  expect(created.code).toBe(0);
  expect(created.stdout.trim().split('\n')).toHaveLength(1);
  const org = created.lines[0] as { org_id: string; key_id: string; api_key: string };
  expect(org.org_id).toMatch(UUID);
  expect(org.key_id).toMatch(UUID);
  expect(org.api_key).toMatch(/^[a-z]{2}_/);

  const issued = await crm(db, 'key', 'create', '--org', org.org_id, '--name', 'ci');
  expect(issued.stderr).toBe('');
  expect(issued.code).toBe(0);
  expect(issued.lines).toHaveLength(1);
  const key = issued.lines[0] as { key_id: string; api_key: string };
  expect(key.key_id).toMatch(UUID);
  expect(key.api_key).toMatch(/^[a-z]{2}_/);
  expect(key.api_key).not.toBe(org.api_key);

  const revoked = await crm(db, 'key', 'revoke', key.key_id);
  expect(revoked.code).toBe(0);
  expect(revoked.lines).toEqual([{ key_id: key.key_id, revoked: true }]);

  const listed = await crm(db, 'key', 'list', '--org', org.org_id);
  expect(listed.code).toBe(0);
  expect(listed.lines).toHaveLength(2);
  const byId = new Map(listed.lines.map((k) => [k.key_id, k]));
  expect(byId.get(org.key_id)).toMatchObject({ org_id: org.org_id, name: 'default', revoked_at: null });
  expect(byId.get(key.key_id)).toMatchObject({ org_id: org.org_id, name: 'ci' });
  expect(Date.parse(String(byId.get(key.key_id)?.revoked_at))).not.toBeNaN();
  // Keys are shown once: neither the key nor its hash ever comes back.
  expect(listed.stdout).not.toContain(org.api_key);
  expect(listed.stdout).not.toContain(key.api_key);
  expect(listed.stdout).not.toMatch(/api_key|key_hash/);

  const orgs = await crm(db, 'org', 'list');
  expect(orgs.code).toBe(0);
  expect(orgs.lines).toContainEqual(expect.objectContaining({ org_id: org.org_id, name: 'Acme Inc' }));
}

describe('command line', () => {
  it('hands a server the paths of an import made absolute, since it has its own working directory', () => {
    // From where `npm run` was called (INIT_CWD), else this process's directory.
    const abs = (p: string) => path.resolve(process.env.INIT_CWD ?? process.cwd(), p);
    expect(portableArgv(['import', 'a.csv', '--org', 'x', '--rejects=r.ndjson'])).toEqual([
      'import',
      abs('a.csv'),
      '--org',
      'x',
      `--rejects=${abs('r.ndjson')}`,
    ]);
    expect(portableArgv(['import', '--org=x', 'a.csv', '--rejects', 'r.ndjson'])).toEqual([
      'import',
      '--org=x',
      abs('a.csv'),
      '--rejects',
      abs('r.ndjson'),
    ]);
    expect(portableArgv(['key', 'create', '--org', 'x', '--name', 'ci'])).toEqual([
      'key',
      'create',
      '--org',
      'x',
      '--name',
      'ci',
    ]);
  });

  it('prints usage on stdout and exits 0 for help or no arguments', async () => {
    const db = { CRM_DATA_DIR: path.join(tmpdir(), 'crm-cli-never-opened') };
    // No arguments at all is run as the real process: it checks what main.ts takes from process.argv,
    // that it prints on stdout and exits with what run() returns, and that nothing else (a warning
    // from Node) reaches the terminal. The other two are the same code path, so they run in this process.
    const results = [await crmProcessOn(db), await crm(db, 'help'), await crm(db, '--help')];
    for (const result of results) {
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/^Usage: /);
      expect(result.stdout).toContain('key revoke <key_id>');
      expect(result.stderr).toBe('');
    }
  });

  it('answers an unknown command or a missing argument with a usage hint on stderr and exit 2', async () => {
    const db = { CRM_DATA_DIR: path.join(tmpdir(), 'crm-cli-never-opened') };
    const unknown = await crm(db, 'frobnicate');
    expect(unknown.code).toBe(2);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr).toMatch(/^error: unknown command "frobnicate"\n/);
    expect(unknown.stderr).toContain('help');

    const missing = await crm(db, 'key', 'revoke');
    expect(missing.code).toBe(2);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toContain('error: missing argument <key_id>');
    expect(missing.stderr).toContain('usage: npm run --silent crm -- key revoke <key_id>');

    const noOrg = await crm(db, 'key', 'create');
    expect(noOrg.code).toBe(2);
    expect(noOrg.stderr).toContain('missing option --org');
  });
});

describe('embedded database (PGlite)', () => {
  let dataDir: string;
  let db: Database;

  beforeAll(() => {
    dataDir = freshDataDir();
    db = { CRM_DATA_DIR: dataDir };
  });
  afterAll(() => {
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('creates an organization and issues, lists and revokes keys', SLOW, () => roundTrip(db));

  it('rejects an unknown organization or key with one error line and exit 1', SLOW, async () => {
    const missingOrg = '0190a0a0-0000-7000-8000-000000000000';
    const unknownOrg = await crm(db, 'key', 'create', '--org', missingOrg);
    expect(unknownOrg.code).toBe(1);
    expect(unknownOrg.stdout).toBe('');
    expect(unknownOrg.stderr).toBe(`error: organization ${missingOrg} does not exist\n`);

    const unknownKey = await crm(db, 'key', 'revoke', missingOrg);
    expect(unknownKey.code).toBe(1);
    expect(unknownKey.stderr).toBe(`error: API key ${missingOrg} does not exist\n`);

    const notUuid = await crm(db, 'key', 'list', '--org', 'acme');
    expect(notUuid.code).toBe(1);
    expect(notUuid.stderr).toBe('error: --org must be a UUID, got "acme"\n');
  });

  it('sets, shows and resets an organization’s own monthly quotas', SLOW, async () => {
    const created = await crm(db, 'org', 'create', 'Quota Inc');
    const orgId = (created.lines[0] as { org_id: string }).org_id;
    const period = new Date().toISOString().slice(0, 7);

    const shown = await crm(db, 'org', 'quota', orgId);
    expect(shown.code).toBe(0);
    expect(shown.lines).toEqual([
      {
        org_id: orgId,
        period,
        api_calls: { limit: 1_000_000, own: false, used: 0 },
        ai_calls: { limit: 10_000, own: false, used: 0 },
      },
    ]);

    const set = await crm(db, 'org', 'set-quota', orgId, '--api', '5000', '--ai', '0');
    expect(set.stderr).toBe('');
    expect(set.lines).toEqual([
      {
        org_id: orgId,
        period,
        api_calls: { limit: 5000, own: true, used: 0 },
        ai_calls: { limit: 0, own: true, used: 0 },
      },
    ]);

    const reset = await crm(db, 'org', 'set-quota', orgId, '--ai', 'default');
    expect(reset.lines[0]).toMatchObject({
      api_calls: { limit: 5000, own: true },
      ai_calls: { limit: 10_000, own: false },
    });

    const bad = await crm(db, 'org', 'set-quota', orgId, '--api', 'lots');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toBe(
      'error: --api must be a whole number of calls per month, or "default"; got "lots"\n',
    );
    const nothing = await crm(db, 'org', 'set-quota', orgId);
    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toContain('give --api and/or --ai');
    const missing = await crm(db, 'org', 'quota', '0190a0a0-0000-7000-8000-000000000000');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe('error: organization 0190a0a0-0000-7000-8000-000000000000 does not exist\n');
  });

  // The CLI runs as a separate process here, as it does next to a running server: the lock is between
  // processes, and the real process's stderr (no stack trace, no warning) and exit code are what the
  // user gets. The server holds this suite's data directory, which exists already (a new one would cost
  // a second initdb and all migrations).
  it('refuses, with one clear line, a data directory the server holds', SLOW, async () => {
    const server = await openDatabase({ kind: 'pglite', dataDir }, 'server');
    try {
      const result = await crmProcessOn(db, 'org', 'list');
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(/^error: The embedded database at .* is in use by the server \(pid \d+/);
      expect(result.stderr).toContain(`pid ${process.pid}`);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
    } finally {
      await server.close();
    }
  });
});

const url = process.env.TEST_DATABASE_URL;

describe('PostgreSQL', () => {
  let admin: pg.Client | undefined;
  let dbName: string;
  let databaseUrl: string;

  beforeAll(async () => {
    if (!url) return;
    dbName = `crm_cli_test_${randomBytes(6).toString('hex')}`;
    admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(`create database ${dbName}`);
    const target = new URL(url);
    target.pathname = `/${dbName}`;
    databaseUrl = target.toString();
  }, 30_000);
  afterAll(async () => {
    if (!admin) return;
    try {
      await admin.query(`drop database if exists ${dbName} with (force)`);
    } finally {
      await admin.end();
    }
  }, 30_000);

  it.skipIf(!url)('runs migrate and the key round trip (needs TEST_DATABASE_URL)', SLOW, async () => {
    const db = { DATABASE_URL: databaseUrl };
    const migrated = await crm(db, 'migrate');
    expect(migrated.stderr).toBe('');
    expect(migrated.lines).toEqual([{ migrated: true }]);
    await roundTrip(db);
  });

  it.skipIf(!url)(
    'stops on a database name the server does not have, naming it; only migrate creates it',
    SLOW,
    async () => {
      const typo = `${dbName}_typo`;
      const target = new URL(databaseUrl);
      target.pathname = `/${typo}`;
      const db = { DATABASE_URL: target.toString() };
      const exists = async () =>
        ((await admin?.query('select 1 from pg_database where datname = $1', [typo]))?.rowCount ?? 0) > 0;
      try {
        // As the user runs it: one line, no stack, exit 1, and no database made behind their back.
        const listed = await crmProcessOn(db, 'org', 'list');
        expect(listed.stderr).toBe(
          `error: no database "${typo}" on PostgreSQL at ${target.host} (DATABASE_URL): check its name, or create it with \`npm run crm -- migrate\`\n`,
        );
        expect(listed.code).toBe(1);
        expect(listed.stdout).toBe('');
        expect(await exists()).toBe(false);

        const migrated = await crm(db, 'migrate');
        expect(migrated.stderr).toBe(
          `note: no database "${typo}" on PostgreSQL at ${target.host}: creating a new, empty one\n`,
        );
        expect(migrated.lines).toEqual([{ migrated: true }]);
        expect(await exists()).toBe(true);
        const after = await crm(db, 'org', 'list');
        expect(after.stderr).toBe('');
        expect(after.code).toBe(0);
      } finally {
        await admin?.query(`drop database if exists ${typo} with (force)`);
      }
    },
  );
});
