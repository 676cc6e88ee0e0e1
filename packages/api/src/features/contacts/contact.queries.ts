import type { Tables } from '@crm/db';
import type { ExpressionBuilder } from 'kysely';
import { isoOf, storedText } from '../../read-model.ts';
import { storedJson } from '../../stored-json.ts';
import type { ContactDto } from './contact.schemas.ts';

/**
 * A contact's columns as a list answers them (as `c`), from the query's own builder or a subquery's; its
 * custom values as their stored text, answered by `listedContact`.
 */
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
      storedText('c.custom').as('custom'),
    ]);

/** A listed contact's row as the API's Contact: its custom values as stored (`StoredJson`). */
export const listedContact = (row: Record<string, unknown>): ContactDto =>
  ({ ...row, custom: storedJson(row.custom) }) as ContactDto;
