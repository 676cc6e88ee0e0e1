import { createHash } from 'node:crypto';
import { type EntityManager, transaction, uuidv7 } from '@crm/db';
import { z } from 'zod';
import { type AuthedContext, headerValue } from './context.ts';
import { ApiError } from './errors.ts';
import { orgDb } from './org-scope.ts';

/** How long a stored first response answers retries with the same key. */
export const IDEMPOTENCY_WINDOW_HOURS = 24;

/** An `Idempotency-Key`, as the header, the OpenAPI document and the MCP argument take it. */
export const IdempotencyKey = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[\x21-\x7e]*$/)
  .meta({
    description:
      'Retry safely: the same key with the same input within 24 hours returns the first answer instead of doing it again; with another input, 422.',
  });

/** JSON with every object's keys sorted, at every depth: {a,b} and {b,a} are the same request. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : v,
  );
}

function requestHash(operation: string, input: unknown): string {
  const canonical = canonicalJson(input);
  return createHash('sha256').update(operation).update('\0').update(canonical).digest('hex');
}

/**
 * Runs a create once per `Idempotency-Key` (scoped to the API key), in one transaction with the
 * stored response. A concurrent retry blocks on the key's unique index until the first commits,
 * then replays its response; if the first rolled back, the retry runs for real. Without a key, `run`
 * is simply called: it owns its atomicity (one statement, or `transaction`, which joins this one).
 */
export async function withIdempotency<T>(
  ctx: AuthedContext,
  operation: string,
  input: unknown,
  run: (em: EntityManager) => Promise<T>,
): Promise<T> {
  const key = headerValue(ctx, 'idempotency-key');
  if (key === undefined) return run(ctx.em);
  if (!IdempotencyKey.safeParse(key).success)
    throw new ApiError('invalid_request', 'Idempotency-Key: must be 1 to 255 printable ASCII characters');
  const hash = requestHash(operation, input);
  const apiKeyId = ctx.principal.apiKeyId;

  return transaction(ctx.em, async (em) => {
    await em.execute(
      `delete from idempotency_keys where api_key_id = ? and key = ? and created_at < now() - interval '${IDEMPOTENCY_WINDOW_HOURS} hours'`,
      [apiKeyId, key],
    );
    const inserted = await em.execute<{ id: string }[]>(
      `insert into idempotency_keys (id, api_key_id, key, operation, request_hash, created_at)
       values (?, ?, ?, ?, ?, now()) on conflict (api_key_id, key) do nothing returning id`,
      [uuidv7(), apiKeyId, key, operation, hash],
    );
    const id = inserted[0]?.id;
    if (id) {
      const result = await run(em);
      await em.execute('update idempotency_keys set response_status = ?, response_body = ? where id = ?', [
        201, // only creates take an Idempotency-Key
        JSON.stringify(result),
        id,
      ]);
      return result;
    }
    const [stored] = await em.execute<
      { operation: string; request_hash: string; response_status: number | null; response_body: unknown }[]
    >(
      'select operation, request_hash, response_status, response_body from idempotency_keys where api_key_id = ? and key = ?',
      [apiKeyId, key],
    );
    if (!stored || stored.response_body == null)
      throw new ApiError(
        'idempotency_key_in_use',
        'Idempotency-Key: a request with this key is still in progress',
      );
    if (stored.operation !== operation || stored.request_hash !== hash)
      throw new ApiError(
        'idempotency_key_reused',
        'Idempotency-Key: this key was already used with a different request body',
      );
    ctx.response.headers['idempotent-replayed'] = 'true';
    const body =
      typeof stored.response_body === 'string' ? JSON.parse(stored.response_body) : stored.response_body;
    return body as T;
  });
}

/** Deletes stored responses past their window (a retry after it creates afresh anyway). Returns how many. */
export async function pruneIdempotencyKeys(em: EntityManager): Promise<number> {
  const rows = await em.execute<{ id: string }[]>(
    `delete from idempotency_keys where created_at < now() - interval '${IDEMPOTENCY_WINDOW_HOURS} hours' returning id`,
  );
  return rows.length;
}

/**
 * The stored answers of the organization's keys that name `recordId` (a person being erased), replaced by
 * `{"data": {"id": …, "erased": true}}`: a retry within the window replays that, never the person.
 * Returns how many. Idempotency records belong to a key, so they are found through the organization's keys.
 */
export async function redactStoredAnswers(em: EntityManager, recordId: string): Promise<number> {
  const keys = (await orgDb(em).selectFrom('api_keys').select('id').execute()).map((k) => k.id);
  if (keys.length === 0) return 0;
  const rows = await em.execute<{ id: string }[]>(
    `update idempotency_keys set response_body = ?
      where api_key_id in (select jsonb_array_elements_text(?::jsonb)::uuid)
        and position(? in response_body::text) > 0
      returning id`,
    [JSON.stringify({ data: { id: recordId, erased: true } }), JSON.stringify(keys), recordId],
  );
  return rows.length;
}
