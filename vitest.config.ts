import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts', 'apps/*/test/**/*.test.ts'],
    // Each file boots its own server on a fresh database (PGlite in memory, or a new PostgreSQL database).
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Two test files at a time on this 2-core machine (vitest's default leaves one core idle): the suites
    // mostly wait on databases, timers and child processes, so the wall time nearly halves.
    maxWorkers: 2,
    reporters: ['default'],
  },
});
