export { LockMode, ref } from '@mikro-orm/core';
export * from './entities.ts';
export * from './ids.ts';
export * from './orm.ts';
