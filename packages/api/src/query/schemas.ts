import { z } from 'zod';
import { Uuid } from '../schemas.ts';
import { FILTER_LIMITS } from './filter.ts';
import { MAX_SORT_KEYS } from './sort.ts';

const FILTER_TEXT = `A condition \`{"field": "value", "op": "gte", "value": 10000}\` or a group \`{"and": […]}\`, \`{"or": […]}\`, \`{"not": {…}}\`; at most ${FILTER_LIMITS.conditions} conditions, ${FILTER_LIMITS.depth} levels of groups. Fields, operators and errors: docs/api/query.md`;

const EXAMPLE = {
  and: [
    { field: 'value', op: 'gte', value: 10000 },
    { field: 'stage_type', op: 'eq', value: 'open' },
  ],
};

/** The longest `?filter=` text: 50 conditions of long values fit; a longer filter goes in POST …/query. */
const MAX_FILTER_TEXT = 16_000;

/**
 * `?filter=`: the tree as JSON text, parsed here so that text that is not JSON is the input's 400
 * (`filter: not valid JSON …`); the tree itself is checked against the object's fields when the list runs.
 */
export const FilterParam = z
  .string()
  .max(MAX_FILTER_TEXT, `at most ${MAX_FILTER_TEXT} characters; send longer filters to POST …/query`)
  .transform((text, ctx): unknown => {
    try {
      return JSON.parse(text);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: `not valid JSON (${(err as Error).message})` });
      return z.NEVER;
    }
  })
  .describe(`The filter tree as URL-encoded JSON. ${FILTER_TEXT}`)
  .meta({ example: JSON.stringify(EXAMPLE) });

/** The filter tree in a body (POST …/query): an object, checked against the object's fields when the list runs. */
export const FilterBody = z.record(z.string(), z.unknown()).describe(FILTER_TEXT).meta({ example: EXAMPLE });

export const SortParam = z
  .string()
  .max(1_000)
  .describe(
    `Comma-separated fields, \`-\` for descending (\`-value,created_at\`), at most ${MAX_SORT_KEYS}; empty values last, the id breaks ties. Newest first when left out`,
  );

/**
 * `view`: a saved view's id (POST /views). Its filter is ANDed with `filter` and the list's own
 * parameters; its sort applies unless `sort` is given.
 */
export const ViewParam = Uuid.describe(
  'A saved view’s id (POST /views): its filter is ANDed with `filter` and the other parameters, its sort applies unless `sort` is given (docs/api/query.md, Saved views)',
);
