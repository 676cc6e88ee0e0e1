import type { ProgressBar } from '@crm/api';
import { Presets, SingleBar } from 'cli-progress';

/**
 * The progress of a long command (import) on stderr, beside the JSON on stdout: a bar redrawn in place
 * on a terminal, a line every five seconds when stderr is a file or a pipe (CI logs, `2> import.log`).
 */
export function stderrProgress(): ProgressBar {
  const bar = new SingleBar(
    {
      stream: process.stderr,
      format:
        'import |{bar}| {percentage}% of the file | {imported} imported, {rejected} rejected | {eta_formatted} left',
      noTTYOutput: true,
      notTTYSchedule: 5_000,
      hideCursor: true,
      etaBuffer: 50,
    },
    Presets.shades_classic,
  );
  return {
    start: (total) => bar.start(total, 0, { imported: 0, rejected: 0 }),
    update: (done, counts) => bar.update(done, counts),
    stop: () => bar.stop(),
  };
}
