export * from './admin/api-keys.ts';
export * from './admin/organizations.ts';
export { authenticate } from './auth.ts';
export * from './context.ts';
export * from './errors.ts';
export { pruneIdempotencyKeys } from './idempotency.ts';
export { buildOpenApiDocument } from './openapi.ts';
export { type AppRouter, appRouter } from './router.ts';
export type { ApiErrorData, Meta } from './trpc.ts';
