import { Migration } from '@mikro-orm/migrations';

/**
 * The organization's own fields (docs/api/custom-fields.md): their definitions in `custom_fields`, their
 * values in a `custom` jsonb column of each record.
 *
 * A unique field's values are claimed in `custom_unique_values`, one row per (organization, object, field,
 * value's SHA-256), by row triggers on the records: whichever path writes a record (one create, a batch, an import,
 * an operator's psql session), a second holder of a value fails in the statement that writes it, and two
 * concurrent writers of one value wait for each other there (the claim's primary key) instead of both
 * committing. The failure is raised as SQLSTATE CRM09 with the field and the holder in its detail, which
 * the API answers as a 409 naming both. Records whose `custom` is `{}` skip the triggers' work.
 */
export class Migration20261130000000_custom_fields extends Migration {
  override name = 'Migration20261130000000_custom_fields';

  override up(): void {
    this.addSql(`create table custom_fields (
      org_id uuid not null references organizations (id) on delete cascade,
      object text not null check (object in ('deals', 'contacts', 'companies')),
      key text not null check (key ~ '^[a-z][a-z0-9_]{0,39}$'),
      label text not null,
      type text not null,
      required boolean not null default false,
      is_unique boolean not null default false,
      default_value jsonb,
      options jsonb not null default '[]',
      validation jsonb not null default '{}',
      description text,
      ai_hint text,
      position integer not null,
      archived_at timestamptz,
      created_at timestamptz not null,
      updated_at timestamptz,
      primary key (org_id, object, key));`);
    this.addSql(`alter table deals add column custom jsonb not null default '{}';`);
    this.addSql(`alter table contacts add column custom jsonb not null default '{}';`);
    // A value is claimed by its SHA-256 (of its text, `custom ->> key`): a B-tree entry holds at most
    // 2,704 bytes, and a text value may be 32 KB.
    this.addSql(`create table custom_unique_values (
      org_id uuid not null,
      object text not null,
      key text not null,
      value_hash bytea not null,
      record_id uuid not null,
      primary key (org_id, object, key, value_hash));`);
    this.addSql(`create index custom_unique_values_record on custom_unique_values (record_id);`);

    // tg_argv[0]: the object the table holds ('deals', 'contacts').
    this.addSql(`create function crm_claim_custom_unique() returns trigger language plpgsql as $$
    declare
      obj text := tg_argv[0];
      taken record;
      holder uuid;
    begin
      if tg_op in ('UPDATE', 'DELETE') then
        delete from custom_unique_values where record_id = old.id and object = obj and org_id = old.org_id;
        if tg_op = 'DELETE' then return null; end if;
      end if;
      for taken in
        select f.key, new.custom ->> f.key as value
        from custom_fields f
        where f.org_id = new.org_id and f.object = obj and f.is_unique and f.archived_at is null
          and jsonb_typeof(new.custom -> f.key) is distinct from 'null'
          and new.custom ? f.key
        order by f.key
      loop
        insert into custom_unique_values (org_id, object, key, value_hash, record_id)
          values (new.org_id, obj, taken.key, sha256(convert_to(taken.value, 'UTF8')), new.id)
          on conflict do nothing;
        if not found then
          select record_id into holder from custom_unique_values
            where org_id = new.org_id and object = obj and key = taken.key
              and value_hash = sha256(convert_to(taken.value, 'UTF8'));
          raise exception 'custom.% is unique: % already holds the value', taken.key, holder
            using errcode = 'CRM09',
                  detail = json_build_object('field', 'custom.' || taken.key, 'holder', holder, 'object', obj)::text;
        end if;
      end loop;
      return null;
    end
    $$;`);
    for (const table of ['deals', 'contacts']) {
      this.addSql(`create trigger ${table}_custom_unique_insert after insert on ${table}
        for each row when (new.custom <> '{}') execute function crm_claim_custom_unique('${table}');`);
      this.addSql(`create trigger ${table}_custom_unique_update after update of custom on ${table}
        for each row when (old.custom is distinct from new.custom)
        execute function crm_claim_custom_unique('${table}');`);
      this.addSql(`create trigger ${table}_custom_unique_delete after delete on ${table}
        for each row when (old.custom <> '{}') execute function crm_claim_custom_unique('${table}');`);
    }
  }
}
