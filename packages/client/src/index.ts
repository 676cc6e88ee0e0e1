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
