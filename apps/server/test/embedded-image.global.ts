import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { migratedEmbeddedImage, openDatabase } from '@crm/db';
import pg from 'pg';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A file holding a migrated, empty embedded database (see startTestServer). */
    embeddedImage: string;
    /** A data directory holding a migrated, empty embedded database (see migratedDataDir). */
    embeddedDataDir: string;
    /**
     * The prefix of every PostgreSQL database this run creates (createDatabase), so that the run drops
     * what it made and nothing of another run's on the same server.
     */
    postgresPrefix: string;
    /** A migrated, empty PostgreSQL database that test servers' databases are copied from, or '' without one. */
    postgresTemplate: string;
  }
}

const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL;

async function onAdmin<T>(adminUrl: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

/** Creates the database `name` on the server of `adminUrl` and applies every migration to it. */
async function migratedPostgresDatabase(adminUrl: string, name: string): Promise<void> {
  await onAdmin(adminUrl, (admin) => admin.query(`create database ${name}`));
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const db = await openDatabase(
    { kind: 'postgresql', url: url.toString(), poolMax: 2, connectTimeoutMs: 10_000, queryTimeoutMs: 60_000 },
    'test',
  );
  await db.close();
}

/** Drops every database whose name starts with `prefix` (this run's). */
async function dropDatabases(adminUrl: string, prefix: string): Promise<void> {
  await onAdmin(adminUrl, async (admin) => {
    const { rows } = await admin.query<{ datname: string }>(
      'select datname from pg_database where starts_with(datname, $1)',
      [prefix],
    );
    for (const { datname } of rows) await admin.query(`drop database if exists ${datname} with (force)`);
  });
}

/**
 * Vitest's global setup: migrates one empty embedded database and writes its data directory image, which
 * every in-memory test server then starts from instead of creating and migrating a cluster of its own,
 * and a data directory made from it, which tests copy where a process needs a database on disk.
 *
 * With TEST_DATABASE_URL, beside it (in PostgreSQL's processes, while this one works on the embedded
 * image), one migrated PostgreSQL database that each PostgreSQL test server's database is copied from
 * (`create database … template`): a copy costs what creating an empty database does, where applying the
 * 27 migrations to each new database cost 1-3 s a server. The run's databases are dropped at its end,
 * including any a test server's stop() left dropping when its worker exited.
 */
export default async function setup(project: TestProject) {
  const prefix = `crm_test_${randomBytes(3).toString('hex')}_`;
  const template = TEST_DATABASE_URL ? `${prefix}template` : '';
  const postgres = TEST_DATABASE_URL ? migratedPostgresDatabase(TEST_DATABASE_URL, template) : undefined;
  // Awaited below in any case, so that a failure of the embedded image does not leave it unobserved.
  postgres?.catch(() => {});

  const dir = mkdtempSync(path.join(tmpdir(), 'crm-test-image-'));
  const file = path.join(dir, 'embedded.tar');
  const image = await migratedEmbeddedImage();
  writeFileSync(file, Buffer.from(await image.arrayBuffer()));
  project.provide('embeddedImage', file);
  const dataDir = path.join(dir, 'data');
  await (await openDatabase({ kind: 'pglite', dataDir, image }, 'test')).close();
  project.provide('embeddedDataDir', dataDir);

  await postgres;
  project.provide('postgresPrefix', prefix);
  project.provide('postgresTemplate', template);
  return async () => {
    rmSync(dir, { recursive: true, force: true });
    if (TEST_DATABASE_URL) await dropDatabases(TEST_DATABASE_URL, prefix);
  };
}
