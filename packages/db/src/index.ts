export * from './entities.ts';
export * from './orm.ts';
