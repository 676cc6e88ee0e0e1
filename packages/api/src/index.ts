export { type AdminRouter, adminRouter } from './admin/admin.router.ts';
export * from './admin/api-keys.ts';
export * from './admin/audit.ts';
export * from './admin/cli/command-line.ts';
export type { Action } from './admin/cli/commands.ts';
export { CliError, UsageError } from './admin/cli/errors.ts';
export type * from './admin/cli/io.ts';
export * from './admin/dashboard-auth.ts';
export * from './admin/invitations.ts';
export * from './admin/organizations.ts';
export * from './admin/people.ts';
export { admitCall } from './admission.ts';
export { actFor, authenticate } from './auth.ts';
export * from './call-context.ts';
export * from './context.ts';
export * from './errors.ts';
export { type DomainEvent, emitEvent } from './events.ts';
export { maintainKeptAnalytics } from './features/ai/kept-analytics.ts';
export type { CustomFieldCreateInput } from './features/custom-fields/custom-field.schemas.ts';
export {
  CUSTOM_LIMITS,
  CUSTOM_OBJECTS,
  FIELD_TYPES,
} from './features/custom-fields/custom-field.schemas.ts';
export { createCustomField } from './features/custom-fields/custom-fields.service.ts';
export { matchedOf, searchSql } from './features/search/search.service.ts';
export { pruneIdempotencyKeys } from './idempotency.ts';
export { LIMIT_GROUPS, type LimitGroup } from './limits/groups.ts';
export { admitRequest, LIMIT_HEADER_NAMES } from './limits/limit-check.ts';
export { type Admission, Limits, OWN_QUOTAS_REFRESH_MS } from './limits/limits.ts';
export type { Log } from './limits/log.ts';
export * from './limits/org-quotas.ts';
export { createMcpServer, MCP_SERVER_INFO, onRequest } from './mcp/server.ts';
export { callTool, type McpCaller, TOOLS } from './mcp/tools.ts';
export { buildOpenApiDocument } from './openapi.ts';
export { orgFork, TENANT_TABLES } from './org-scope.ts';
export { matchesPlan, type Plan } from './query/evaluate.ts';
export { builtInCatalogue, CUSTOM_TYPES, type QueryObject } from './query/fields.ts';
export { OPERATORS_BY_TYPE } from './query/filter.ts';
export { COMPANIES, CONTACTS, DEALS } from './query/objects.ts';
export { matchOperation, type RestMatch, restInput } from './rest.ts';
export { type AppRouter, appRouter } from './router.ts';
export * from './routes.ts';
export * from './scopes.ts';
export { placeCommitted } from './sequencer.ts';
export { type CallOutcome, logFailure, serveCall } from './serve-call.ts';
export { createServices } from './services.ts';
export type { ApiErrorData, Meta, RateLimitGroup } from './trpc.ts';
export { RATE_LIMIT_GROUPS } from './trpc.ts';
