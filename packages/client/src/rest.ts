import createClient, { type Client } from 'openapi-fetch';
import { type ClientOptions, trimSlash } from './options.ts';
import type { paths } from './rest-schema.gen.ts';
import { crmFetch, REST_PATH } from './transport.ts';

/** The REST API's paths, methods, parameters and bodies, from its OpenAPI document. */
export type RestPaths = paths;
export type CrmRestClient = Client<paths>;

/**
 * The REST API (`/api/v1/crm`) typed from its OpenAPI document, through openapi-fetch:
 * `rest.GET('/deals/{id}', { params: { path: { id } } })`. Retries, timeouts and CrmError as on
 * createCrmClient: an error answer is thrown, so a call that returns has its `data`.
 */
export function createCrmRestClient(options: ClientOptions): CrmRestClient {
  return createClient<paths>({
    baseUrl: `${trimSlash(options.baseUrl)}${REST_PATH}`,
    fetch: crmFetch(options),
  });
}
