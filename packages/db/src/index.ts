export { LockMode, ref } from '@mikro-orm/core';
export * from './entities.ts';
export { asRequest, DATABASE_PROBE_TIMEOUT_MS } from './hang-watch.ts';
export * from './ids.ts';
export * from './orm.ts';
