import {
  createTRPCClientProxy,
  httpLink,
  type TRPCClient,
  TRPCClientError,
  type TRPCLink,
  type TRPCRequestOptions,
  TRPCUntypedClient,
} from '@trpc/client';
import type { TRPCBuiltRouter, TRPCMutationProcedure, TRPCQueryProcedure } from '@trpc/server';
import { observable } from '@trpc/server/observable';
import type { CustomObject, UntypedFields, ViewCreateWith, WithFields } from './custom-fields.ts';
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

type Record_ = AppRouter['_def']['record'];
/** The areas whose inputs and outputs carry custom values or a filter (search answers deals and contacts). */
type TypedArea = CustomObject | 'search';

type TypedProcedure<P, F, O extends CustomObject | undefined, Name> = P extends {
  _def: { type: infer Kind; $types: { input: infer I; output: infer Out } };
}
  ? Kind extends 'query'
    ? TRPCQueryProcedure<{
        meta: object;
        input: WithFields<I, F, O, 'create'>;
        output: WithFields<Out, F, O, 'out'>;
      }>
    : TRPCMutationProcedure<{
        meta: object;
        // `update` sends a PATCH's values (only those that change; null clears); every other input creates.
        input: WithFields<I, F, O, Name extends 'update' ? 'patch' : 'create'>;
        output: WithFields<Out, F, O, 'out'>;
      }>
  : P;

/** `views.create` with its filter typed by the object the view is of (ViewCreateWith). */
type ViewCreateProcedure<P, F> = P extends { _def: { $types: { input: infer I; output: infer Out } } }
  ? TRPCMutationProcedure<{ meta: object; input: ViewCreateWith<I, F>; output: Out }>
  : P;

/** The router with the organization's fields `F` (`crm schema types`) in `custom` and `filter`. */
export type AppRouterWith<F> = TRPCBuiltRouter<
  AppRouter['_def']['_config']['$types'],
  {
    [A in keyof Record_]: A extends TypedArea
      ? {
          [Op in keyof Record_[A]]: TypedProcedure<
            Record_[A][Op],
            F,
            A extends CustomObject ? A : undefined,
            Op
          >;
        }
      : A extends 'views'
        ? {
            [Op in keyof Record_[A]]: Op extends 'create'
              ? ViewCreateProcedure<Record_[A][Op], F>
              : Record_[A][Op];
          }
        : Record_[A];
  }
>;

/**
 * The typed client: `crm.deals.create.mutate({ title })`, each procedure's input and output checked. With
 * an organization's fields (`CrmClient<OrgFields>`, the declaration `crm schema types` prints), `custom`
 * and the `filter` of `*.query` are typed by them too.
 */
export type CrmClient<F = UntypedFields> = [F] extends [UntypedFields]
  ? TRPCClient<AppRouter>
  : TRPCClient<AppRouterWith<F>>;

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
export function createCrmClient<F = UntypedFields>(options: ClientOptions): CrmClient<F> {
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
  // The organization's fields are types only: the calls are the same.
  return createTRPCClientProxy(caller) as CrmClient<F>;
}
