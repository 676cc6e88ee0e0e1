import { fileURLToPath } from 'node:url';
import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

// Node's on-disk compile cache for every worker and every process a test starts (servers, the CLI, MCP
// over stdio): they all load the same modules, and compiling them again cost ~0.45 s of CPU per process.
process.env.NODE_COMPILE_CACHE ??= fileURLToPath(
  new URL('node_modules/.cache/node-compile-cache', import.meta.url),
);

// Workspace packages are imported from their TypeScript sources (the `@crm/source` export condition, as
// tsconfig.base.json has it); an app outside the repository gets @crm/client's built files.
const conditions = ['@crm/source', ...defaultServerConditions];

export default defineConfig({
  ssr: { resolve: { conditions } },
  test: {
    include: ['packages/*/test/**/*.test.ts', 'apps/*/test/**/*.test.ts'],
    // One migrated embedded database that every in-memory test server starts from (see the file).
    globalSetup: ['apps/server/test/embedded-image.global.ts'],
    // Each file boots its own server on a fresh database (PGlite in memory, or a new PostgreSQL database).
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Test files run one after another in the same two worker processes instead of a new process each,
    // which imported the whole service again for every file: `npm test` went from 760 to 566 s of CPU and
    // vitest from 436 to 338 s (2026-11-25). Files share nothing but loaded modules: each starts its own
    // servers on its own databases, and none sets process.env or leaves fake timers behind.
    isolate: false,
    // Two test files at a time on this 2-core machine (vitest's default leaves one core idle): the suites
    // mostly wait on databases, timers and child processes, so the wall time nearly halves.
    maxWorkers: 2,
    reporters: ['default'],
  },
});
