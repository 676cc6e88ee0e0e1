import type { AdminRouter } from '@crm/api';
import { queryOptions } from '@tanstack/react-query';
import { createTRPCClient, httpBatchLink, TRPCClientError } from '@trpc/client';
import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';

/** The typed tRPC client of the admin API (session cookie, same origin). */
export const api = createTRPCClient<AdminRouter>({
  links: [httpBatchLink({ url: '/admin/trpc' })],
});

export type Inputs = inferRouterInputs<AdminRouter>;
export type Outputs = inferRouterOutputs<AdminRouter>;

export type Me = Outputs['me'];
export type Role = Me['user']['role'];
export type QuotaNotice = Me['quota_notices'][number];
export type ApiKey = Outputs['keys']['list'][number];
export type Webhook = Outputs['webhooks']['list'][number];
export type Delivery = Outputs['webhooks']['deliveries']['data'][number];
export type DeliveryStatus = Delivery['status'];
export type UsageSummary = Outputs['usage']['summary'];
export type DailyUsage = UsageSummary['daily'][number];
export type Member = Outputs['team']['list']['members'][number];
export type Invitation = Outputs['team']['list']['invitations'][number];
export type AuditEntry = Outputs['audit']['list']['data'][number];
export type FieldsList = Outputs['fields']['list'];
export type CustomObject = FieldsList['objects'][number]['object'];
export type CustomField = FieldsList['objects'][number]['fields'][number];
export type FieldTypeRule = FieldsList['types'][number];
export type FieldType = FieldTypeRule['type'];
export type SchemaPlan = Outputs['fields']['schemaPlan'];
export type SchemaStep = SchemaPlan['steps'][number];

export const DELIVERY_STATUSES = [
  'pending',
  'succeeded',
  'failed',
  'cancelled',
] as const satisfies readonly DeliveryStatus[];

/**
 * Query options per procedure. Keys are the procedure path, so `invalidateQueries({ queryKey: ['webhooks'] })`
 * refreshes every webhook query. Mutation results never go through here: the secrets that some mutations
 * return stay in the state of the dialog that shows them.
 */
export const queries = {
  me: () => queryOptions({ queryKey: ['me'], queryFn: () => api.me.query() }),
  keys: () => queryOptions({ queryKey: ['keys', 'list'], queryFn: () => api.keys.list.query() }),
  usage: () => queryOptions({ queryKey: ['usage', 'summary'], queryFn: () => api.usage.summary.query() }),
  eventTypes: () =>
    queryOptions({
      queryKey: ['webhooks', 'eventTypes'],
      queryFn: () => api.webhooks.eventTypes.query(),
      staleTime: 5 * 60_000,
    }),
  webhooks: () => queryOptions({ queryKey: ['webhooks', 'list'], queryFn: () => api.webhooks.list.query() }),
  deliveries: (input: Inputs['webhooks']['deliveries']) =>
    queryOptions({
      queryKey: ['webhooks', 'deliveries', input],
      queryFn: () => api.webhooks.deliveries.query(input),
      // Poll while a delivery is still pending, so retries and test events show up by themselves.
      refetchInterval: (query) => (query.state.data?.data.some((d) => d.status === 'pending') ? 3000 : false),
    }),
  team: () => queryOptions({ queryKey: ['team', 'list'], queryFn: () => api.team.list.query() }),
  fields: () => queryOptions({ queryKey: ['fields', 'list'], queryFn: () => api.fields.list.query() }),
  audit: (input: { limit: number; offset: number }) =>
    queryOptions({ queryKey: ['audit', 'list', input], queryFn: () => api.audit.list.query(input) }),
  invitation: (token: string) =>
    queryOptions({ queryKey: ['invitation', token], queryFn: () => api.invitation.get.query({ token }) }),
};

/** The HTTP status the server answered a tRPC call with, if it answered at all. */
export function httpStatusOf(error: unknown): number | undefined {
  if (error instanceof TRPCClientError) {
    const data: unknown = error.data;
    if (data && typeof data === 'object' && 'httpStatus' in data && typeof data.httpStatus === 'number') {
      return data.httpStatus;
    }
  }
  return undefined;
}

/** A sentence to show for a failed call: the server's own message, or what went wrong on the way. */
export function errorMessage(error: unknown): string {
  if (error instanceof TRPCClientError) {
    if (httpStatusOf(error) === undefined) {
      return 'Could not reach the server. Check your connection and try again.';
    }
    return error.message || 'Something went wrong.';
  }
  if (error instanceof Error && error.message) return error.message;
  return 'Something went wrong.';
}
