import {
  createTRPCClientProxy,
  httpLink,
  type TRPCClient,
  TRPCClientError,
  type TRPCLink,
  type TRPCRequestOptions,
  TRPCUntypedClient,
} from '@trpc/client';
import { observable } from '@trpc/server/observable';
import { type ClientOptions, trimSlash } from './options.ts';
import { rememberResponse } from './response.ts';
import type { AppRouter } from './router.gen.ts';
import { crmFetch, TRPC_PATH } from './transport.ts';

declare module '@trpc/client' {
  interface OperationContext {
    /** Sent as `Idempotency-Key` on a create: the same key and input within 24 hours create once. */
    idempotencyKey?: string;
  }
}

/** The typed client: `crm.deals.create.mutate({ title })`, each procedure's input and output checked. */
export type CrmClient = TRPCClient<AppRouter>;

/** Remembers which answer each result came from, for `responseOf`. */
const responseLink: TRPCLink<AppRouter> =
  () =>
  ({ next, op }) =>
    observable((observer) =>
      next(op).subscribe({
        next(envelope) {
          const response = (envelope.context as { response?: unknown } | undefined)?.response;
          if (response instanceof Response) rememberResponse(envelope.result.data, response);
          observer.next(envelope);
        },
        error: (err) => observer.error(err),
        complete: () => observer.complete(),
      }),
    );

/**
 * tRPC wraps whatever the fetch threw in a TRPCClientError; the caller gets the CrmError (or the
 * TimeoutError, AbortError, network TypeError) itself.
 */
function unwrap(err: unknown): never {
  throw err instanceof TRPCClientError && err.cause instanceof Error ? err.cause : err;
}

class CrmTrpcCaller extends TRPCUntypedClient<AppRouter> {
  override query(path: string, input?: unknown, opts?: TRPCRequestOptions): Promise<unknown> {
    return super.query(path, input, opts).catch(unwrap);
  }
  override mutation(path: string, input?: unknown, opts?: TRPCRequestOptions): Promise<unknown> {
    return super.mutation(path, input, opts).catch(unwrap);
  }
}

/**
 * The client most apps want: every procedure of the API, typed, over tRPC (`/trpc`), with retries,
 * timeouts and CrmError (see ClientOptions). `crm.deals.list.query({ limit: 10 })`.
 */
export function createCrmClient(options: ClientOptions): CrmClient {
  const caller = new CrmTrpcCaller({
    links: [
      responseLink,
      httpLink({
        url: `${trimSlash(options.baseUrl)}${TRPC_PATH}`,
        fetch: crmFetch(options),
        headers: ({ op }) =>
          op.context.idempotencyKey ? { 'Idempotency-Key': op.context.idempotencyKey } : {},
      }),
    ],
  });
  return createTRPCClientProxy(caller);
}
