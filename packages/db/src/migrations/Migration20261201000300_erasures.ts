import { Migration } from '@mikro-orm/migrations';

/**
 * Receipts of erased people (`POST /contacts/{id}/erase`, docs/api/privacy.md): that a contact was
 * erased, when, by whom and what was removed or redacted, with no personal data (the contact's id is a
 * random identifier, kept so the erasure can be shown to have happened).
 */
export class Migration20261201000300_erasures extends Migration {
  override name = 'Migration20261201000300_erasures';

  override up(): void {
    this.addSql(`create table erasure_receipts (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      contact_id uuid not null,
      erased_at timestamptz not null,
      actor jsonb null,
      removed jsonb not null);`);
    this.addSql('create index erasure_receipts_org on erasure_receipts (org_id, erased_at desc);');
  }
}
