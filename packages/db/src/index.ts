export { LockMode, ref } from '@mikro-orm/core';
export * from './entities.ts';
export { asRequest, DATABASE_PROBE_TIMEOUT_MS } from './hang-watch.ts';
export * from './ids.ts';
export { TRACKED as HISTORY_FIELDS } from './migrations/Migration20261202000100_field_history.ts';
export * from './orm.ts';
