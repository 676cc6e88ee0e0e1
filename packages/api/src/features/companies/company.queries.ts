import type { Tables } from '@crm/db';
import type { ExpressionBuilder } from 'kysely';
import { isoOf, storedText } from '../../read-model.ts';

/**
 * A company's columns as the API answers them (as `co`); from the query's own builder, or a subquery's. A
 * list's (`listed`) has its custom values as their stored text (`StoredJson`).
 */
export const companyRows = (db: Pick<ExpressionBuilder<Tables, never>, 'selectFrom'>, listed = false) =>
  db
    .selectFrom('companies as co')
    .select([
      'co.id',
      'co.name',
      'co.domain',
      'co.industry',
      'co.size',
      'co.website',
      isoOf('co.created_at').as('created_at'),
      isoOf('co.updated_at').as('updated_at'),
      listed ? storedText('co.custom').as('custom') : 'co.custom',
    ]);
