import createClient, { type Client } from 'openapi-fetch';
import type { CustomObject, UntypedFields, ViewCreateWith, WithFields } from './custom-fields.ts';
import { type ClientOptions, trimSlash } from './options.ts';
import type { paths } from './rest-schema.gen.ts';
import { crmFetch, REST_PATH } from './transport.ts';

/** The REST API's paths, methods, parameters and bodies, from its OpenAPI document. */
export type RestPaths = paths;

/** The object a path is about (`/deals/{id}` → deals), for its `custom` and `filter`. */
type AreaOf<P> = P extends `/${infer Head}/${string}` ? Head : P extends `/${infer Head}` ? Head : never;

type OperationWith<Op, F, O extends CustomObject | undefined, Method> = {
  [K in keyof Op]: K extends 'requestBody'
    ? WithFields<Op[K], F, O, Method extends 'patch' ? 'patch' : 'create'>
    : K extends 'responses'
      ? WithFields<Op[K], F, O, 'out'>
      : Op[K];
};

/** `POST /views` with its filter typed by the object the view is of (ViewCreateWith). */
type ViewCreateOperation<Op, F> = {
  [K in keyof Op]: K extends 'requestBody'
    ? { content: { 'application/json': ViewCreateWith<JsonBody<NonNullable<Op[K]>>, F> } }
    : Op[K];
};

/** A request body's JSON, as openapi-typescript writes it. */
type JsonBody<B> = B extends { content: { 'application/json': infer T } } ? T : never;

/** The paths with the organization's fields `F` (`crm schema types`) in `custom` and `filter`. */
export type RestPathsWith<F> = {
  [P in keyof paths]: AreaOf<P> extends CustomObject | 'search'
    ? {
        [M in keyof paths[P]]: M extends 'parameters'
          ? paths[P][M]
          : OperationWith<paths[P][M], F, AreaOf<P> extends CustomObject ? AreaOf<P> : undefined, M>;
      }
    : P extends '/views'
      ? { [M in keyof paths[P]]: M extends 'post' ? ViewCreateOperation<paths[P][M], F> : paths[P][M] }
      : paths[P];
};

/** The REST client; with an organization's fields (`CrmRestClient<OrgFields>`), `custom` and `filter` typed by them. */
export type CrmRestClient<F = UntypedFields> = [F] extends [UntypedFields]
  ? Client<paths>
  : Client<RestPathsWith<F>>;

/**
 * The REST API (`/api/v1/crm`) typed from its OpenAPI document, through openapi-fetch:
 * `rest.GET('/deals/{id}', { params: { path: { id } } })`. Retries, timeouts and CrmError as on
 * createCrmClient: an error answer is thrown, so a call that returns has its `data`.
 */
export function createCrmRestClient<F = UntypedFields>(options: ClientOptions): CrmRestClient<F> {
  return createClient<paths>({
    baseUrl: `${trimSlash(options.baseUrl)}${REST_PATH}`,
    fetch: crmFetch(options),
  }) as CrmRestClient<F>;
}
