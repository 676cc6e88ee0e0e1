export * from './entities.ts';
export * from './orm.ts';
export { ref } from '@mikro-orm/core';
