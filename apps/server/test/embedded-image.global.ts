import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { migratedEmbeddedImage, openDatabase } from '@crm/db';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A file holding a migrated, empty embedded database (see startTestServer). */
    embeddedImage: string;
    /** A data directory holding a migrated, empty embedded database (see migratedDataDir). */
    embeddedDataDir: string;
  }
}

/**
 * Vitest's global setup: migrates one empty embedded database and writes its data directory image, which
 * every in-memory test server then starts from instead of creating and migrating a cluster of its own,
 * and a data directory made from it, which tests copy where a process needs a database on disk.
 */
export default async function setup(project: TestProject) {
  const dir = mkdtempSync(path.join(tmpdir(), 'crm-test-image-'));
  const file = path.join(dir, 'embedded.tar');
  // 16 MB of shared buffers instead of PostgreSQL's 128: PGlite allocates and zeroes them at every start
  // (~150 ms of CPU an open, measured; some 55 test servers a run), and a test's tables fit in a few megabytes.
  const image = await migratedEmbeddedImage({ shared_buffers: '16MB' });
  writeFileSync(file, Buffer.from(await image.arrayBuffer()));
  project.provide('embeddedImage', file);
  const dataDir = path.join(dir, 'data');
  await (await openDatabase({ kind: 'pglite', dataDir, image }, 'test')).close();
  project.provide('embeddedDataDir', dataDir);
  return () => rmSync(dir, { recursive: true, force: true });
}
