export { type Io, PROGRAM, parseCommandLine, run, usage } from './cli.ts';
