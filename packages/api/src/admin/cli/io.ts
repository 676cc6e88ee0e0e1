/** Where a command writes: its own file, so the commands and the command line need not import each other. */
export interface Io {
  stdout(line: string): void;
  stderr(line: string): void;
  /** A terminal's progress bar, for long commands (import); absent where nobody watches one. */
  progress?: ProgressBar;
}

export interface ProgressBar {
  start(total: number): void;
  update(done: number, counts: { imported: number; rejected: number }): void;
  stop(): void;
}
