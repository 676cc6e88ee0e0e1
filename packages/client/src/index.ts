import type { AppRouter } from '@crm/api';
import { createTRPCClient, httpLink, type TRPCClient } from '@trpc/client';
import createClient, { type Client } from 'openapi-fetch';
import type { paths } from './rest-schema.gen.ts';

export type { paths as RestPaths } from './rest-schema.gen.ts';

export interface ClientOptions {
  /** Where the server answers, e.g. `http://localhost:3000`. */
  baseUrl: string;
  /** An API key (`ck_…`); it decides which organization the calls see. */
  apiKey: string;
  /** Optional fetch (tests, proxies). */
  fetch?: typeof globalThis.fetch;
}

const trimSlash = (url: string) => url.replace(/\/+$/, '');

/** Typed tRPC client: `client.deals.list.query({ limit: 10 })`. */
export function createCrmTrpcClient(options: ClientOptions): TRPCClient<AppRouter> {
  return createTRPCClient<AppRouter>({
    links: [
      httpLink({
        url: `${trimSlash(options.baseUrl)}/trpc`,
        headers: { authorization: `Bearer ${options.apiKey}` },
        ...(options.fetch ? { fetch: options.fetch } : {}),
      }),
    ],
  });
}

/** REST SDK typed from the OpenAPI document: `client.GET('/deals/{id}', { params: { path: { id } } })`. */
export function createCrmRestClient(options: ClientOptions): Client<paths> {
  return createClient<paths>({
    baseUrl: `${trimSlash(options.baseUrl)}/api/v1/crm`,
    headers: { authorization: `Bearer ${options.apiKey}` },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
}

/** A page of a cursor list (`GET /deals`, `GET /contacts`), as either client returns it. */
export interface CursorPage<T> {
  data: T[];
  meta: { next_cursor: string | null };
}

/**
 * Every item of a cursor list, page after page in index order (`after` = the last page's `next_cursor`),
 * however large the organization: `for await (const deal of allPages((after) =>
 * trpc.deals.list.query({ limit: 100, after })))`.
 */
export async function* allPages<T>(
  page: (after: string | undefined) => Promise<CursorPage<T>>,
): AsyncGenerator<T> {
  let after: string | undefined;
  do {
    const { data, meta } = await page(after);
    yield* data;
    after = meta.next_cursor ?? undefined;
  } while (after);
}
