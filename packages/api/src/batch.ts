import { type EntityManager, transaction } from '@crm/db';
import { z } from 'zod';
import type { AuthedContext } from './context.ts';
import { ApiError, toApiError } from './errors.ts';
import { quotaExceeded } from './limits/limit-check.ts';

/** How many items one batch call may carry. */
export const MAX_BATCH_ITEMS = 100;

/** A batch body: `{ "items": [ …up to 100 of the single create's body… ] }`. */
export const batchOf = <T extends z.ZodType>(item: T) =>
  z
    .strictObject({
      items: z
        .array(item)
        .min(1, 'give at least one item')
        .max(MAX_BATCH_ITEMS, `at most ${MAX_BATCH_ITEMS} items per call`),
    })
    // The document's example: the single create's own examples, as one batch.
    .meta({ examples: [{ items: item.meta()?.examples ?? [] }] });

/**
 * Creates every item with the single create's own code (so each records the same activity and emits the
 * same event), all in one transaction: all or nothing. An item that fails fails the call with its index
 * in the message (`items[3].stage_id: …`). Each item counts as one API call: the call itself was counted
 * when admitted; the other items are counted before the commit, and a batch the quota cannot take answers
 * 429 with nothing written. `Idempotency-Key` replays the whole batch's answer (authedProcedure).
 */
export function createBatch<I, O>(
  ctx: AuthedContext,
  input: { items: I[] },
  create: (em: EntityManager, item: I) => Promise<O>,
): Promise<{ data: O[] }> {
  return transaction(ctx.em, async (tx) => {
    const data: O[] = [];
    for (const [index, item] of input.items.entries()) {
      try {
        data.push(await create(tx, item));
      } catch (err) {
        const failure = toApiError(err);
        if (failure.status >= 500) throw err;
        // A unique value an earlier item of this batch holds: named by its index (its id is never kept).
        const earlier = data.findIndex((d) => (d as { id?: unknown }).id === failure.extra.conflicting_id);
        const message =
          earlier >= 0
            ? failure.message.replace(/held by \w+ [0-9a-f-]{36}/, `held by items[${earlier}] of this batch`)
            : failure.message;
        throw new ApiError(
          failure.code,
          `items[${index}]${/^\w[\w.[\]]*:/.test(message) ? '.' : ': '}${message}`,
          {
            extra: failure.extra,
            headers: failure.headers,
          },
        );
      }
    }
    await chargeItems(ctx, input.items.length - 1);
    return { data };
  });
}

async function chargeItems(ctx: AuthedContext, units: number): Promise<void> {
  if (units <= 0) return;
  const { charged, quota, period, nowMs } = await ctx.services.limits.chargeMore(ctx.principal, units);
  if (charged) return;
  throw quotaExceeded(
    'api_quota_exceeded',
    `Monthly API call quota too small for this batch: its ${units + 1} items count as ${units + 1} calls, and ${quota.used} of ${quota.limit} are used in ${period.key} (UTC); it resets at ${period.resetAt}`,
    quota,
    period,
    nowMs,
  );
}
