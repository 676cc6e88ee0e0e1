import { Migration } from '@mikro-orm/migrations';

/**
 * A contact on many deals, each link with its own role (docs/api/stakeholders.md).
 *
 * - A contact's first deal is the contract's `deal_id`, and its role there the contact's own `role_type`,
 *   `influence_level`, `engagement_level` and `sentiment`, as always: stored once, in `contacts`.
 * - Its links to other deals are rows of `deal_stakeholders`, each with the role of that link. A deal's
 *   stakeholders are its contacts and the contacts its links name.
 * - A deal's primary contact is `deals.primary_contact_id`: one column, so a deal has at most one by
 *   construction (deleting the contact clears it).
 */
export class Migration20261201000100_stakeholders extends Migration {
  override name = 'Migration20261201000100_stakeholders';

  override up(): void {
    this.addSql(`create table deal_stakeholders (
      org_id uuid not null references organizations (id) on delete cascade,
      deal_id uuid not null references deals (id) on delete cascade,
      contact_id uuid not null references contacts (id) on delete cascade,
      role_type text not null default 'unknown',
      influence_level text null,
      engagement_level text null,
      sentiment text null,
      created_at timestamptz not null,
      updated_at timestamptz null,
      primary key (deal_id, contact_id));`);
    this.addSql('create index deal_stakeholders_contact on deal_stakeholders (contact_id, created_at);');
    this.addSql(
      'alter table deals add column primary_contact_id uuid null references contacts (id) on delete set null;',
    );
  }
}
