/** A failure the user can fix (bad value, unknown id): printed as one `error:` line, exit code 1. */
export class CliError extends Error {
  override name = 'CliError';
}

/** The command line itself is wrong (unknown command, missing argument): a usage hint, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
  /** The synopsis of the command that was meant, when known. */
  readonly synopsis: string | undefined;

  constructor(message: string, synopsis?: string) {
    super(message);
    this.synopsis = synopsis;
  }
}
