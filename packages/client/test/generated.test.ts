import { readFile } from 'node:fs/promises';
import type { ErrorBody as ServerErrorBody, AppRouter as ServerRouter } from '@crm/api';
import { OPERATIONS } from '@crm/api';
import type { WebhookEventType as StoredEventType } from '@crm/db';
import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';
import { describe, expect, it } from 'vitest';
import { QUERY_FILE, renderQueryTypes } from '../scripts/query-types.ts';
import { GENERATED_FILE, renderRestTypes } from '../scripts/rest-types.ts';
import type { AppRouter, ErrorBody, WebhookEvent, WebhookEventType } from '../src/index.ts';
import { IDEMPOTENT_CREATES } from '../src/router.gen.ts';

/** True when A and B are the same type, not merely assignable either way. */
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

// After changing a schema or a procedure: `npm run generate -w @crm/client`.
describe('the generated client types', () => {
  it('REST: match the OpenAPI document the server serves', async () => {
    expect(await readFile(GENERATED_FILE, 'utf8')).toBe(await renderRestTypes());
  });

  it('filters: the fields and operators the query language declares', async () => {
    expect(await readFile(QUERY_FILE, 'utf8')).toBe(await renderQueryTypes());
  });

  it('tRPC: every procedure takes and returns what the server router does (checked by `npm run typecheck`)', () => {
    // Exact equality (vitest's expectTypeOf misreads the `void` inputs): a stale type fails to compile here.
    const same: [
      Same<inferRouterInputs<AppRouter>, inferRouterInputs<ServerRouter>>,
      Same<inferRouterOutputs<AppRouter>, inferRouterOutputs<ServerRouter>>,
      Same<ErrorBody, ServerErrorBody>,
      // Every kind of event the server stores has its payload type, and the test event too.
      Same<WebhookEvent['type'], StoredEventType | 'webhook.test'>,
      Same<WebhookEventType, StoredEventType>,
    ] = [true, true, true, true, true];
    expect(same).not.toContain(false);
  });

  it('the creates that take an Idempotency-Key are the route table’s', () => {
    expect(IDEMPOTENT_CREATES).toEqual(
      OPERATIONS.filter((op) => op.idempotencyKey).map((op) => [op.procedure, op.path]),
    );
  });
});
