export { LockMode, ref } from '@mikro-orm/core';
export * from './entities.ts';
export { asRequest, DATABASE_PROBE_TIMEOUT_MS } from './hang-watch.ts';
export * from './ids.ts';
export { TRACKED as HISTORY_FIELDS } from './migrations/Migration20261202000100_field_history.ts';
export { GIN_INDEXES } from './migrations/Migration20261204000000_gin_pending_lists.ts';
export * from './orm.ts';
