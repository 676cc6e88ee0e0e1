import type { Tables } from '@crm/db';
import type { ExpressionBuilder } from 'kysely';
import { isoOf } from '../../read-model.ts';

/** A contact's columns as the API answers them (as `c`); from the query's own builder, or a subquery's. */
export const contactRows = (db: Pick<ExpressionBuilder<Tables, never>, 'selectFrom'>) =>
  db
    .selectFrom('contacts as c')
    .select([
      'c.id',
      'c.name',
      'c.email',
      'c.title',
      'c.phone',
      'c.deal_id',
      'c.company_id',
      'c.role_type',
      'c.department',
      'c.influence_level',
      'c.engagement_level',
      'c.sentiment',
      'c.linkedin_url',
      'c.notes',
      isoOf('c.created_at').as('created_at'),
      isoOf('c.updated_at').as('updated_at'),
      'c.custom',
    ]);
