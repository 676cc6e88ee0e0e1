export { type Io, parseCommandLine, run, usage } from './cli.ts';
export { CliError, UsageError } from './errors.ts';
