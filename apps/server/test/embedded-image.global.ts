import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { migratedEmbeddedImage } from '@crm/db';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A file holding a migrated, empty embedded database (see startTestServer). */
    embeddedImage: string;
  }
}

/**
 * Vitest's global setup: migrates one empty embedded database and writes its data directory image, which
 * every in-memory test server then starts from instead of creating and migrating a cluster of its own.
 */
export default async function setup(project: TestProject) {
  const dir = mkdtempSync(path.join(tmpdir(), 'crm-test-image-'));
  const file = path.join(dir, 'embedded.tar');
  writeFileSync(file, Buffer.from(await (await migratedEmbeddedImage()).arrayBuffer()));
  project.provide('embeddedImage', file);
  return () => rmSync(dir, { recursive: true, force: true });
}
