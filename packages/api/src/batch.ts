import { type EntityManager, transaction } from '@crm/db';
import { z } from 'zod';
import type { AuthedContext } from './context.ts';
import { ApiError, toApiError } from './errors.ts';
import { type CustomObject, FieldKey } from './features/custom-fields/custom-field.schemas.ts';
import { holderOf, upsertField } from './features/custom-fields/custom-fields.service.ts';
import { checkedValue, type FieldRule } from './features/custom-fields/custom-values.ts';
import { quotaExceeded } from './limits/limit-check.ts';
import { lockForOrg } from './org-scope.ts';
import { dataOf } from './schemas.ts';

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
  /** Run in the batch's transaction before its first item (an upsert takes its locks there). */
  prepare?: (em: EntityManager) => Promise<void>,
): Promise<{ data: O[] }> {
  return transaction(ctx.em, async (tx) => {
    await prepare?.(tx);
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

/** What an upsert did with each item, in order. */
export type UpsertResult = 'created' | 'updated';

/**
 * The body of a batch that may upsert: `batchOf(item)` and `upsert_on` (over REST a query parameter: give
 * the procedure `query: ['upsert_on']`).
 */
export const upsertBatchOf = <T extends z.ZodType>(item: T, noun: string) =>
  batchOf(item)
    .extend({
      upsert_on: FieldKey.optional().describe(
        `A unique custom field: an item whose value of it ${noun} holds changes that record (only the fields sent), the others are created; \`meta.results\` says which`,
      ),
    })
    .meta({ examples: batchOf(item).meta()?.examples });

/** A batch's answer: the records in the items' order, and with `upsert_on` what became of each. */
export const upsertBatchAnswer = <T extends z.ZodType>(record: T) =>
  dataOf(z.array(record)).extend({
    meta: z
      .object({
        upserted_on: z.string(),
        results: z.array(z.enum(['created', 'updated'])).describe('What became of each item, in order'),
      })
      .optional()
      .describe('With upsert_on only'),
  });

/**
 * A batch of deals, contacts or companies (docs/api/custom-fields.md: Upserting): without `upsert_on`
 * as `createBatch`; with it, an item whose value of that unique field a record holds is written by
 * `update` (the record's PATCH), the others by `create`. An item without a value is created; a value
 * that two items bring, the first creates and the second updates. Concurrent upserts of one value take
 * turns: the batch locks its values (sorted, so two batches never wait on each other in a circle) before
 * its first item, so the second finds the first's record, committed, and updates it.
 */
export async function upsertBatch<I extends { custom?: Record<string, unknown> | null }, O>(
  ctx: AuthedContext,
  object: CustomObject,
  input: { items: I[]; upsert_on?: string | undefined },
  write: {
    create: (em: EntityManager, item: I) => Promise<O>;
    update: (em: EntityManager, id: string, item: I) => Promise<O>;
  },
): Promise<{ data: O[]; meta?: { upserted_on: string; results: UpsertResult[] } }> {
  const { upsert_on, ...batch } = input;
  if (upsert_on === undefined) return createBatch(ctx, batch, write.create);
  const rule = await upsertField(ctx.em, object, upsert_on);
  const results: UpsertResult[] = [];
  const done = await createBatch(
    ctx,
    batch,
    async (em, item) => {
      const value = upsertValue(rule, item);
      const holder = value === undefined ? undefined : await holderOf(em, object, rule.key, value);
      results.push(holder ? 'updated' : 'created');
      return holder ? write.update(em, holder, item) : write.create(em, item);
    },
    (tx) => lockUpsertValues(tx, object, rule, batch.items),
  );
  return { ...done, meta: { upserted_on: upsert_on, results } };
}

/** An item's value of the field upserted on, as stored; undefined when it has none (or one not valid). */
export function upsertValue(rule: FieldRule, item: { custom?: Record<string, unknown> | null }): unknown {
  const value = item.custom?.[rule.key];
  if (value === undefined || value === null) return undefined;
  try {
    return checkedValue(rule, value);
  } catch {
    return undefined; // the item's own write names the mistake, with its index
  }
}

/** Takes the transaction's lock on each value the items bring, in one order whoever takes them. */
export async function lockUpsertValues(
  tx: EntityManager,
  object: CustomObject,
  rule: FieldRule,
  items: Iterable<{ custom?: Record<string, unknown> | null }>,
): Promise<void> {
  const names = new Set<string>();
  for (const item of items) {
    const value = upsertValue(rule, item);
    if (value !== undefined) names.add(`upsert:${object}:${rule.key}:${JSON.stringify(value)}`);
  }
  for (const name of [...names].sort()) await lockForOrg(tx, name);
}
