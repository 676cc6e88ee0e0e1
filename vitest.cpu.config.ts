import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.ts';

// `npm test`'s vitest, each test file's CPU time (its worker's and the processes it started) and wall time
// appended to $TEST_CPU_OUT as one JSON line a file: `TEST_CPU_OUT=/tmp/cpu.jsonl npx vitest run --config
// vitest.cpu.config.ts [files]` (docs/development.md, Tests).
export default mergeConfig(
  base,
  defineConfig({ test: { setupFiles: ['apps/bench/src/test-time/cpu.setup.ts'] } }),
);
