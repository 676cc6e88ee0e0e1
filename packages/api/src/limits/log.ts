/** What the limits need from a logger (pino's shape), so the api package does not pick one. */
export interface Log {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}
