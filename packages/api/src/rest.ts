import { ApiError } from './errors.ts';
import { API_BASE_PATH, OPERATIONS, type Operation } from './routes.ts';

/** A REST request matched to its documented operation, with the values of its path parameters. */
export interface RestMatch {
  operation: Operation;
  params: Record<string, string>;
}

/**
 * The documented operation for `method` on `path` (under API_BASE_PATH), or the JSON 404/405 (with
 * `Allow`) a client gets for a path or method that has none.
 */
export function matchOperation(method: string, path: string): RestMatch {
  const candidates = OPERATIONS.filter((op) => op.pattern.test(path));
  // A literal path (`/deals/batch`) is its own resource, not an id of the templated one (`/deals/{id}`):
  // GET /deals/batch is 405 (POST only), not a 400 about an id.
  const literal = candidates.filter((op) => op.path === path);
  const matching = literal.length > 0 ? literal : candidates;
  if (matching.length === 0)
    throw new ApiError('not_found', `No such endpoint: ${method} ${API_BASE_PATH}${path}`);
  // HEAD is a GET whose body is not sent.
  const operation = matching.find((op) => op.method === (method === 'HEAD' ? 'GET' : method));
  if (!operation) {
    const methods: string[] = matching.map((op) => op.method);
    if (methods.includes('GET')) methods.push('HEAD');
    const allow = [...new Set(methods)].join(', ');
    throw new ApiError(
      'method_not_allowed',
      `${method} is not allowed on ${API_BASE_PATH}${path}; allowed: ${allow}`,
      { headers: { Allow: allow } },
    );
  }
  return { operation, params: { ...operation.pattern.exec(path)?.groups } };
}

/**
 * The procedure's input from a REST request: the query (reads and deletes) or the JSON body (creates and
 * updates), with the path parameters over it. What REST alone could get wrong is refused here, so that
 * every door then validates the same input alike: a path parameter repeated in the body, a query
 * parameter the operation does not read (`?limt=1` would otherwise be ignored and the default used
 * without a word), or one given twice.
 */
export function restInput(
  { operation, params }: RestMatch,
  query: Record<string, string | string[] | undefined>,
  body: unknown,
): unknown {
  if (body !== undefined && (typeof body !== 'object' || body === null || Array.isArray(body)))
    throw new ApiError('invalid_request', 'Request body must be a JSON object');
  const shadowed = operation.pathParams.filter((p) => body && Object.hasOwn(body, p));
  if (shadowed.length > 0) throw new ApiError('invalid_request', `Unknown property: ${shadowed.join(', ')}`);

  const unknown = Object.keys(query).filter((name) => !operation.queryParams.has(name));
  if (unknown.length > 0) {
    const known = [...operation.queryParams];
    throw new ApiError(
      'invalid_request',
      `Unknown query parameter${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}` +
        (known.length > 0 ? ` (this operation reads ${known.join(', ')})` : ' (this operation reads none)'),
    );
  }
  // No documented query parameter is a list: a repeated one is a mistake, not a value to guess at.
  const repeated = Object.entries(query).find(([, value]) => Array.isArray(value));
  if (repeated) throw new ApiError('invalid_request', `${repeated[0]}: give this query parameter once`);

  if (operation.inputKeys.length === 0) return undefined;
  const readsQuery = operation.method === 'GET' || operation.method === 'DELETE';
  return { ...(readsQuery ? query : (body as Record<string, unknown> | undefined)), ...params };
}
