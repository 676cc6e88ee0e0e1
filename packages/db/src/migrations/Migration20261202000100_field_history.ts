import { Migration } from '@mikro-orm/migrations';

/**
 * Field history (docs/api/history.md): every value a deal, contact or company field held, from when.
 *
 * - Derived from the outbox, by a row trigger on its inserts: every write already emits its event with the
 *   record as answered (creates) or its `changes` ({field: {from, to}}, updates), plus actor and id, in its
 *   own transaction. So each fact is written once, by one piece of code, whatever door or path wrote it
 *   (REST, tRPC, MCP, batches, upserts, the CLI import, a stakeholder PUT that changes a contact), and it
 *   commits or rolls back with the change.
 * - Insert-only: a row says the value from `valid_from`; until when is the next row's `valid_from` for the
 *   field, computed at read time, so a write never updates an older row.
 * - A creation is one row, field `*`: the record as its event answered it, less what is derived (so each
 *   tracked field's first value, nulls included, and `custom`), from the record's own `created_at` (an
 *   imported deal's past date); the API reads it as one entry per tracked field and custom value. One row
 *   and no JSON walked, not a row per field: those cost a create 15-20 index entries and a quarter more
 *   database time (docs/api/history.md, Cost). An update records each changed field, a row each, at the
 *   event's time.
 * - A company rename is carried to the deals that follow its name (`company_name_follows`, which the API
 *   renames without a deal event): those deals' `company_name` rows are written here, with the company's
 *   event id and actor.
 * - Not tied to the outbox's retention (its rows are not the outbox's), nor to the record (a deleted record's
 *   rows stay until its organization goes; the API reads only existing records).
 * - Records older than this migration: their current values are recorded, from `created_at` when the record
 *   was never updated (`updated_at` null: they are its creation values), else from the migration's time
 *   (history starts then; reads before it are refused, not guessed).
 * - The tracked fields are the written ones of each object's output; derived ones (stage names, win
 *   probability, counts, timestamps) are not history of their own. The API reads the same list
 *   (`HISTORY_FIELDS`, exported from here) to check the fields a client asks for; a later change of it is
 *   a new migration replacing the trigger, and the export moves there.
 */
export const TRACKED = {
  deal: [
    'title',
    'company_name',
    'company_id',
    'value',
    'currency',
    'lifecycle_stage',
    'stage_id',
    'pipeline_id',
    'contact_name',
    'contact_email',
    'contact_phone',
    'notes',
    'lead_source',
    'expected_close_date',
  ],
  contact: [
    'name',
    'email',
    'title',
    'phone',
    'deal_id',
    'company_id',
    'role_type',
    'department',
    'influence_level',
    'engagement_level',
    'sentiment',
    'linkedin_url',
    'notes',
  ],
  company: ['name', 'domain', 'industry', 'size', 'website'],
} as const;

/** The parts of a created record's answer that are no field's value: left out of its creation row. */
const DERIVED = [
  'id',
  'created_at',
  'updated_at',
  'last_activity_at',
  'stage_name',
  'stage_type',
  'pipeline_name',
  'win_probability',
  'deal_health',
  'owner_name',
];

const list = (fields: readonly string[]) => `array[${fields.map((f) => `'${f}'`).join(', ')}]`;

/** JSON of each tracked column of `alias`, as the API answers it (dates in ISO 8601 UTC, ms). */
function snapshot(alias: string, fields: readonly string[], dates: readonly string[] = []): string {
  return `jsonb_build_object(${fields
    .map((f) =>
      dates.includes(f)
        ? `'${f}', to_char(${alias}.${f} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
        : f === 'value'
          ? `'${f}', ${alias}.${f}::float8`
          : `'${f}', ${alias}.${f}`,
    )
    .join(', ')})`;
}

export class Migration20261202000100_field_history extends Migration {
  override name = 'Migration20261202000100_field_history';

  override up(): void {
    this.addSql(`create table field_history (
      id bigint generated always as identity primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      record_type text not null,
      record_id uuid not null,
      field text not null,
      value jsonb not null,
      valid_from timestamptz not null,
      actor jsonb null,
      event_id uuid null);`);
    // Every read names its record (and often fields): a record's rows by field, in time order.
    this.addSql(
      'create index field_history_record on field_history (org_id, record_id, field, valid_from, id);',
    );

    this.addSql(`create function crm_field_history() returns trigger language plpgsql as $$
    declare
      p jsonb := new.payload::jsonb;
      kind text := split_part(new.type, '.', 1);
      rec uuid := case when (p #>> '{data,id}') ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                       then (p #>> '{data,id}')::uuid end;
      tracked text[] := case kind
        when 'deal' then ${list(TRACKED.deal)}
        when 'contact' then ${list(TRACKED.contact)}
        else ${list(TRACKED.company)} end;
    begin
      -- An event that names no record (one written by hand, a test's) has no history to keep.
      if rec is null then return null; end if;
      if split_part(new.type, '.', 2) = 'created' then
        insert into field_history (org_id, record_type, record_id, field, value, valid_from, actor, event_id)
          values (new.org_id, kind, rec, '*', (p -> 'data') - ${list(DERIVED)},
                  coalesce((p #>> '{data,created_at}')::timestamptz, new.created_at), new.actor, new.id);
      elsif p ? 'changes' then
        insert into field_history (org_id, record_type, record_id, field, value, valid_from, actor, event_id)
          select new.org_id, kind, rec, f.key, coalesce(f.value -> 'to', 'null'::jsonb), new.created_at,
                 new.actor, new.id
            from jsonb_each(p -> 'changes') f where f.key = any (tracked) or f.key like 'custom.%';
        if kind = 'company' and (p -> 'changes') ? 'name' then
          insert into field_history (org_id, record_type, record_id, field, value, valid_from, actor, event_id)
            select d.org_id, 'deal', d.id, 'company_name', to_jsonb(d.company_name), new.created_at,
                   new.actor, new.id
              from deals d
             where d.org_id = new.org_id and d.company_id = rec and d.company_name_follows;
        end if;
      end if;
      return null;
    end
    $$;`);
    this.addSql(`create trigger outbox_events_field_history after insert on outbox_events
      for each row when (new.type in ('deal.created', 'deal.updated', 'contact.created', 'contact.updated',
                                      'company.created', 'company.updated'))
      execute function crm_field_history();`);

    // What is known of the records already there (see above).
    const backfill = (table: string, kind: string, row: string) =>
      `insert into field_history (org_id, record_type, record_id, field, value, valid_from, actor, event_id)
       select r.org_id, '${kind}', r.id, '*', ${row} || jsonb_build_object('custom', r.custom),
              case when r.updated_at is null then r.created_at else now() end, null, null
         from ${table} r;`;
    this.addSql(backfill('deals', 'deal', snapshot('r', TRACKED.deal, ['expected_close_date'])));
    this.addSql(backfill('contacts', 'contact', snapshot('r', TRACKED.contact)));
    this.addSql(backfill('companies', 'company', snapshot('r', TRACKED.company)));
  }
}
