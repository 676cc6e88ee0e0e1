import { Migration } from '@mikro-orm/migrations';

/**
 * An index an organization asks for on a custom field (`indexed: true`, docs/api/query.md: An index on a
 * custom field). A value lives in its record's `custom` JSON, where an expression index would serve a
 * page but never the exact count of a large match (PostgreSQL cannot count from an expression index
 * alone); so, as `custom_unique_values` keeps a unique field's values, `custom_indexed_values` keeps an
 * indexed field's: one row per record and value (a multi-select's each option), in the column its type
 * compares in, B-tree indexes leading with (organization, object, field, value, record) so that `eq`,
 * `in`, ranges and their counts read an index alone.
 *
 * - `crm_custom_index_entries(type, value)` is the one definition of a value's rows, read by the trigger
 *   and by the backfill of a field made indexed (custom-fields.service.ts): exactly the values the filter's
 *   JSON expression (query/fields.ts `customExpr`) gives a value, so a lookup here keeps the same rows.
 *   Text is kept to its first 500 characters (a B-tree entry holds at most 2,704 bytes; a text value may be
 *   32 KB): a filter value of 500 characters or more ANDs the JSON's own condition (query/filter.ts). A
 *   date is its midnight UTC, a boolean its text.
 * - Row triggers on deals, contacts and companies keep it, as the unique claims are kept (same events,
 *   same skip of `custom = '{}'`): on an update only the keys whose value changed, read against the
 *   organization's active indexed fields (`custom_fields.is_indexed`); a deleted record's rows go with it.
 */
export class Migration20261203000100_custom_indexed_values extends Migration {
  override name = 'Migration20261203000100_custom_indexed_values';

  override up(): void {
    this.addSql(`alter table custom_fields add column is_indexed boolean not null default false;`);
    this.addSql(`create table custom_indexed_values (
      org_id uuid not null,
      object text not null,
      key text not null,
      value_text text,
      value_num numeric,
      value_time timestamptz,
      record_id uuid not null);`);
    for (const column of ['value_text', 'value_num', 'value_time'])
      this.addSql(`create index custom_indexed_values_${column.slice(6)} on custom_indexed_values
        (org_id, object, key, ${column}, record_id) where ${column} is not null;`);
    this.addSql(`create index custom_indexed_values_record on custom_indexed_values (record_id);`);

    // Guarded casts, as the filter's: a value of another JSON type (or a date that is not YYYY-MM-DD) has
    // no row, as it meets no condition there. PL/pgSQL, not SQL: the backfill calls it once per record in
    // its select list, where a SQL function is never inlined and costs 23 µs a call (0.9 s against 4.7 s
    // for 200,000 records). One row a call, as the planner is told (its default, 1,000, had the backfill's
    // sort of 200,000 records spill to disk).
    this.addSql(`create function crm_custom_index_entries(field_type text, value jsonb)
      returns table (value_text text, value_num numeric, value_time timestamptz)
      language plpgsql stable rows 1 as $$
    declare
      text_of text := value #>> '{}';
    begin
      if field_type in ('text', 'email', 'url', 'phone', 'select') then
        if jsonb_typeof(value) = 'string' then value_text := left(text_of, 500); return next; end if;
      elsif field_type = 'boolean' then
        if jsonb_typeof(value) = 'boolean' then value_text := text_of; return next; end if;
      elsif field_type in ('number', 'currency') then
        if jsonb_typeof(value) = 'number' then value_num := value::numeric; return next; end if;
      elsif field_type = 'date' then
        if text_of ~ '^\\d{4}-\\d{2}-\\d{2}$' then
          value_time := (text_of::date)::timestamp at time zone 'UTC';
          return next;
        end if;
      elsif field_type = 'datetime' then
        if text_of ~ '^\\d{4}-\\d{2}-\\d{2}T' then value_time := text_of::timestamptz; return next; end if;
      elsif field_type = 'multi_select' and jsonb_typeof(value) = 'array' then
        return query select distinct left(e #>> '{}', 500), null::numeric, null::timestamptz
          from jsonb_array_elements(value) e where jsonb_typeof(e) = 'string';
      end if;
    end
    $$;`);

    // tg_argv[0]: the object the table holds ('deals', 'contacts', 'companies').
    this.addSql(`create function crm_index_custom_values() returns trigger language plpgsql as $$
    declare
      obj text := tg_argv[0];
    begin
      if tg_op = 'DELETE' then
        delete from custom_indexed_values where record_id = old.id and object = obj and org_id = old.org_id;
        return null;
      end if;
      if tg_op = 'UPDATE' then
        delete from custom_indexed_values v
         where v.record_id = old.id and v.object = obj and v.org_id = old.org_id
           and (old.custom -> v.key) is distinct from (new.custom -> v.key);
        insert into custom_indexed_values (org_id, object, key, value_text, value_num, value_time, record_id)
          select new.org_id, obj, f.key, e.value_text, e.value_num, e.value_time, new.id
            from custom_fields f, crm_custom_index_entries(f.type, new.custom -> f.key) e
           where f.org_id = new.org_id and f.object = obj and f.is_indexed and f.archived_at is null
             and new.custom ? f.key and (old.custom -> f.key) is distinct from (new.custom -> f.key);
      else
        insert into custom_indexed_values (org_id, object, key, value_text, value_num, value_time, record_id)
          select new.org_id, obj, f.key, e.value_text, e.value_num, e.value_time, new.id
            from custom_fields f, crm_custom_index_entries(f.type, new.custom -> f.key) e
           where f.org_id = new.org_id and f.object = obj and f.is_indexed and f.archived_at is null
             and new.custom ? f.key;
      end if;
      return null;
    end
    $$;`);
    for (const table of ['deals', 'contacts', 'companies']) {
      this.addSql(`create trigger ${table}_custom_index_insert after insert on ${table}
        for each row when (new.custom <> '{}') execute function crm_index_custom_values('${table}');`);
      this.addSql(`create trigger ${table}_custom_index_update after update of custom on ${table}
        for each row when (old.custom is distinct from new.custom)
        execute function crm_index_custom_values('${table}');`);
      this.addSql(`create trigger ${table}_custom_index_delete after delete on ${table}
        for each row when (old.custom <> '{}') execute function crm_index_custom_values('${table}');`);
    }
  }
}
