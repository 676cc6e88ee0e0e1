import { Migration } from '@mikro-orm/migrations';

/**
 * Saved views (issue 31, item 7; docs/api/query.md, Saved views): a named filter and sort of one listed
 * object per row, which a list applies by `?view=<id>`. The name is unique per organization and object,
 * case aside (the API answers 409 naming the holder first, under a lock; the index is the last word). The
 * list of views reads newest first by (org_id, created_at, id), as the other lists do.
 */
export class Migration20261203000200_saved_views extends Migration {
  override name = 'Migration20261203000200_saved_views';

  override up(): void {
    this.addSql(`create table saved_views (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      name text not null,
      object text not null,
      filter jsonb null,
      sort text null,
      description text null,
      created_at timestamptz not null,
      updated_at timestamptz null);`);
    this.addSql('create unique index saved_views_name on saved_views (org_id, object, lower(name));');
    this.addSql('create index saved_views_org_created on saved_views (org_id, created_at desc, id desc);');
  }
}
