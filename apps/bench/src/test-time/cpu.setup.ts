import { appendFileSync, readFileSync } from 'node:fs';
import { afterAll, expect } from 'vitest';

/**
 * CPU time so far of this worker and of the processes it started and waited for (servers, CLI processes,
 * browsers), from /proc/self/stat, in seconds (clock ticks of 1/100 s). A worker runs one file at a time,
 * so what it spent between this setup file (run before each test file) and the file's last hook is the
 * file's. The PostgreSQL and Redis servers' own work is not in it.
 */
function cpu(): { user: number; sys: number } {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]?.split(' ') ?? [];
  // After the command: state is field 3, utime 14, stime 15, cutime 16, cstime 17 (1-based).
  const at = (n: number) => Number(fields[n - 3]) / 100;
  return { user: at(14) + at(16), sys: at(15) + at(17) };
}

// Setup files run again before each file: from here on, the file's import counts too.
const start = { ...cpu(), wall: performance.now() };
afterAll(() => {
  const end = cpu();
  const file = expect.getState().testPath ?? '';
  const out = process.env.TEST_CPU_OUT ?? '/tmp/test-cpu.jsonl';
  appendFileSync(
    out,
    `${JSON.stringify({
      file: file.replace(`${process.cwd()}/`, ''),
      user: +(end.user - start.user).toFixed(2),
      sys: +(end.sys - start.sys).toFixed(2),
      wall: +((performance.now() - start.wall) / 1000).toFixed(2),
    })}\n`,
  );
});
