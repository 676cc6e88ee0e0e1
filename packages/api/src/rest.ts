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

const decodes = (text: string): boolean => {
  try {
    decodeURIComponent(text);
    return true;
  } catch {
    return false;
  }
};

/**
 * What is wrong with the first query parameter whose name or value is not percent-encoded UTF-8
 * (`q=%E0%A4%A`, `limit=5%`): Node's querystring, which Koa parses with, keeps such bytes as they came.
 */
function malformedQuery(querystring: string): string | undefined {
  if (!querystring.includes('%')) return undefined;
  for (const pair of querystring.split('&')) {
    const [name = '', value = ''] = pair.split(/=(.*)/s);
    if (!decodes(name)) return `${name}: malformed percent-encoding in a query parameter's name`;
    if (!decodes(value))
      return `${decodeURIComponent(name)}: malformed percent-encoding in ${JSON.stringify(value)}`;
  }
  return undefined;
}

/**
 * The procedure's input from a REST request: the JSON body (creates and updates), the query parameters the
 * operation reads (every input of reads and deletes, those a create's meta names), and the path
 * parameters over them. What REST alone could get wrong is refused here, so that every door then
 * validates the same input alike: a path parameter repeated in the body, a query
 * parameter the operation does not read (`?limt=1` would otherwise be ignored and the default used
 * without a word), or one given twice.
 */
export function restInput(
  { operation, params }: RestMatch,
  request: {
    /** As it came, to check its percent-encoding: Koa's parser keeps malformed bytes as they came. */
    querystring: string;
    query: Record<string, string | string[] | undefined>;
    body: unknown;
  },
): unknown {
  const { query, body } = request;
  const isObject = typeof body === 'object' && body !== null && !Array.isArray(body);
  // A body to an operation that takes none (analyze, predict) was ignored without a word. An empty
  // object says nothing, and is what some clients send for no body.
  if (!operation.takesBody && body !== undefined && !(isObject && Object.keys(body).length === 0))
    throw new ApiError('invalid_request', `${operation.method} ${operation.path} takes no request body`);
  if (body !== undefined && !isObject)
    throw new ApiError('invalid_request', 'Request body must be a JSON object');
  const shadowed = [...operation.pathParams, ...operation.queryParams].filter(
    (p) => body && Object.hasOwn(body, p),
  );
  if (shadowed.length > 0) throw new ApiError('invalid_request', `Unknown property: ${shadowed.join(', ')}`);

  // First: a name Koa kept undecoded would otherwise be reported as an unknown parameter.
  const malformed = malformedQuery(request.querystring);
  if (malformed) throw new ApiError('invalid_request', malformed);

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
  // A read's body is absent or `{}` (refused above otherwise): its input is its query.
  return { ...(body as Record<string, unknown> | undefined), ...query, ...params };
}
