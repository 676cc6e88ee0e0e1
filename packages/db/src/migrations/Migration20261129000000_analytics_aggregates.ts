import { Migration } from '@mikro-orm/migrations';

/**
 * The briefing's signals and coaching read sums the database keeps, instead of every activity of the last
 * week and every deal closed in the last 90 days (at a million deals: ~19,000 activities matched against
 * the signal lexicon, ~86,000 closed deals with their contacts and activities, seconds per call; docs/api/analytics.md:
 * Analytics at scale). As with the kept counts, triggers write them in the transaction of the rows they
 * summarize, whichever path wrote those rows.
 *
 * - Signals: each recent activity is classified when it is written (`activities.signals`, a bitmask: 1
 *   positive, 2 negative, 4 competitor), each recent deal's creation by the notes it was created with
 *   (`deals.creation_signals`), and counted per hour in `activity_signal_hours`. A read sums the whole
 *   hours of its 7 days and the stored classifications of the one partial hour at the window's start.
 *   Rows older than 8 days when written are not classified (0): no read reaches back that far.
 * - Closes: `deal_closes` holds one row of facts per deal closed in the last 91 days (when it closed, won or
 *   lost, lead source, cycle length, activity count, the coaching traits), recomputed from the deal, its
 *   contacts and its activities whenever one of them changes (`crm_refresh_closes`); `deal_close_days`
 *   sums them per UTC day, outcome and lead source. A read sums its whole days and reads the facts of the
 *   one partial day at the window's start.
 * - Both sum tables are append-only: a write adds rows of differences (+1 for a new row, -1 for one gone)
 *   and never updates a shared row, so writers take no lock on them and cannot deadlock on them;
 *   `crm_fold_kept_sums` (hourly, and after an import) folds each key's rows into one.
 * - `deals.negative_stakeholders` counts a deal's negative or blocking contacts, so the briefing's at-risk
 *   count reads the recent open deals from one index alone (`deals_org_stage_active`, now covering what
 *   health and the at-risk test read).
 *
 * The lexicon is frozen here as it is in @crm/ai today (`signalRegexSql`); a test compares the two, so a
 * change to the lexicon needs a migration that replaces `crm_signal_pattern` and recounts.
 */

/** How far back activities are counted per hour (the briefing reads 7 days). */
const SIGNAL_KEEP_DAYS = 8;
/** How far back closes keep their facts (coaching reads 90 days). */
const CLOSE_KEEP_DAYS = 91;

const PATTERNS = {
  positive:
    '\\m(approved|budget approved|green light|excited|great|happy|love|pleased|agreed|signed|verbal yes|committed|interested|impressed|progress|ready to move)',
  negative:
    '\\m(concern|worried|delay|postpone|pushed back|on hold|unhappy|frustrat|cancel|budget cut|no budget|freeze|too expensive|price objection|not interested|went silent|no response|churn|escalat|complain)',
  competitor:
    '\\m(competitor|competition|competing|competitive|rival|incumbent|alternative vendor|also evaluating|evaluating other|shortlist|versus|vs|bake-off|rfp)',
};

const TRAITS = [
  'economic_buyer_engaged',
  'champion_engaged',
  'multi_threaded',
  'positive_stakeholder',
  'close_date_set',
  'competitor_mentioned',
  'negative_stakeholder',
];

/**
 * Adds signal counts to their hours, as rows of differences. `source` yields (org_id, at, s, sign): `s` a
 * signal bitmask, `sign` 1 or -1.
 */
const countSignals = (source: string) => `
  insert into activity_signal_hours (org_id, hour, positive, negative, competitor)
  select org_id, crm_signal_hour(at), sum(sign * (s & 1)), sum(sign * ((s >> 1) & 1)), sum(sign * ((s >> 2) & 1))
    from (${source}) x
   where s <> 0
   group by 1, 2;`;

/** Adds deal_closes rows (with a `sign` column) to their day's sums, as rows of differences. */
const countCloses = (source: string) => `
  insert into deal_close_days (org_id, day, won, lead_source, deals, cycle_seconds, activities, ${TRAITS.join(', ')})
  select org_id, (closed_at at time zone 'UTC')::date, won, lead_source,
         sum(sign), sum(sign * cycle_seconds), sum(sign * activities), ${TRAITS.map((t) => `sum(sign * ${t}::int)`).join(', ')}
    from (${source}) x
   group by 1, 2, 3, 4;`;

const activitySignals = (rows: string, sign: number) =>
  `select org_id, created_at as at, signals as s, ${sign} as sign from ${rows}`;
const creationSignals = (rows: string, sign: number) =>
  `select org_id, created_at as at, creation_signals as s, ${sign} as sign from ${rows}`;

/**
 * The first statement of every trigger that keeps these sums: an organization being deleted
 * (`crm.deleting_org` set for its transaction) loses its sums with it, so nothing is refreshed or counted
 * (deleting a 10,000-deal organization took 2.4 s with them, 1.8 s without).
 */
const SKIP_WHILE_DELETING_ORG = `if coalesce(current_setting('crm.deleting_org', true), '') <> '' then return null; end if;`;

/** Folds a sum table's rows of differences into one row per key (a key whose sums are all 0 keeps none). */
const fold = (table: string, key: string[], sums: string[]) => `
  with keys as (select ${key.join(', ')} from ${table} group by ${key.join(', ')} having count(*) > 1),
  moved as (delete from ${table} t using keys k where ${key.map((c) => `t.${c} = k.${c}`).join(' and ')} returning t.*)
  insert into ${table} (${[...key, ...sums].join(', ')})
  select ${key.join(', ')}, ${sums.map((c) => `sum(${c})`).join(', ')} from moved group by ${key.join(', ')}
  having ${sums.map((c) => `sum(${c}) <> 0`).join(' or ')};`;

/** The transition tables each event of a statement trigger has. */
const TRANSITION_TABLES = {
  insert: 'new table as new_rows',
  delete: 'old table as old_rows',
  update: 'old table as old_rows new table as new_rows',
};
/** `fn` as an AFTER … FOR EACH STATEMENT trigger of `table` for each event, with its transition tables. */
const statementTriggers = (table: string, fn: string, events: Array<keyof typeof TRANSITION_TABLES>) =>
  events.map(
    (event) => `create trigger ${table}_analytics_${event} after ${event} on ${table}
      referencing ${TRANSITION_TABLES[event]} for each statement execute function ${fn}();`,
  );

export class Migration20261129000000_analytics_aggregates extends Migration {
  override name = 'Migration20261129000000_analytics_aggregates';

  override up(): void {
    // ---- classification ----------------------------------------------------------------------------
    this.addSql(`create function crm_signal_pattern(kind text) returns text language sql immutable parallel safe as $$
      select case kind ${Object.entries(PATTERNS)
        .map(([k, p]) => `when '${k}' then '${p}'`)
        .join(' ')} end $$;`);
    this.addSql(`create function crm_text_signals(t text) returns smallint language sql immutable parallel safe as $$
      select ((case when t ~* crm_signal_pattern('positive') then 1 else 0 end)
            | (case when t ~* crm_signal_pattern('negative') then 2 else 0 end)
            | (case when t ~* crm_signal_pattern('competitor') then 4 else 0 end))::smallint $$;`);
    // A person's text in an activity: the new notes of a recorded change, else the entry's description.
    // A deal's creation reads no text here: the notes it was created with are the deal's creation_signals.
    this.addSql(`create function crm_activity_signals(org uuid, kind text, description text, changes jsonb)
      returns smallint language sql stable parallel safe as $$
      select (crm_text_signals(case when kind in ('deal_created', 'deal_updated', 'stage_changed', 'contact_added', 'contact_updated')
                                    then changes->'notes'->>'to' else description end)
            | (case when kind = 'contact_updated' and changes->'sentiment'->>'to' = 'positive' then 1 else 0 end)
            | (case when kind = 'contact_updated' and (changes->'sentiment'->>'to' = 'negative'
                                                      or changes->'role_type'->>'to' = 'blocker') then 2 else 0 end)
            | (case when kind = 'stage_changed' then coalesce(
                 (select bit_or(case s.stage_type when 'won' then 1 when 'lost' then 2 else 0 end)
                    from pipeline_stages s where s.org_id = org and s.name = changes->'stage'->>'to'), 0)
               else 0 end))::smallint $$;`);
    this.addSql(`create function crm_signal_hour(at timestamptz) returns timestamptz language sql immutable parallel safe as $$
      select date_bin('1 hour', at, timestamptz '2000-01-01 00:00:00+00') $$;`);

    // ---- columns and tables --------------------------------------------------------------------------
    this.addSql(`alter table deals add column creation_signals smallint not null default 0,
      add column negative_stakeholders integer not null default 0;`);
    this.addSql('alter table activities add column signals smallint not null default 0;');
    this.addSql(`create table activity_signal_hours (
      org_id uuid not null,
      hour timestamptz not null,
      positive integer not null,
      negative integer not null,
      competitor integer not null);`);
    this.addSql('create index activity_signal_hours_org on activity_signal_hours (org_id, hour);');
    this.addSql(`create table deal_closes (
      deal_id uuid primary key references deals (id) on delete cascade,
      org_id uuid not null,
      closed_at timestamptz not null,
      won boolean not null,
      lead_source text not null,
      cycle_seconds numeric not null,
      activities integer not null,
      ${TRAITS.map((t) => `${t} boolean not null`).join(',\n      ')});`);
    // The partial day a coaching read takes row by row comes from this index alone.
    this.addSql(`create index deal_closes_org_closed on deal_closes (org_id, closed_at)
      include (won, lead_source, cycle_seconds, activities, ${TRAITS.join(', ')});`);
    this.addSql(`create table deal_close_days (
      org_id uuid not null,
      day date not null,
      won boolean not null,
      lead_source text not null,
      deals integer not null,
      cycle_seconds numeric not null,
      activities bigint not null,
      ${TRAITS.map((t) => `${t} integer not null`).join(',\n      ')});`);
    this.addSql('create index deal_close_days_org on deal_close_days (org_id, day);');
    this.addSql(`create function crm_fold_kept_sums() returns void language plpgsql as $$
    begin
      -- One fold at a time; writers are not held up (they only append).
      perform pg_advisory_xact_lock(hashtext('crm_fold_kept_sums'));
      ${fold('activity_signal_hours', ['org_id', 'hour'], ['positive', 'negative', 'competitor'])}
      ${fold('deal_close_days', ['org_id', 'day', 'won', 'lead_source'], ['deals', 'cycle_seconds', 'activities', ...TRAITS])}
    end
    $$;`);

    // ---- close facts ---------------------------------------------------------------------------------
    // The deals are locked first: their facts are read after the lock, so a concurrent close, contact or
    // activity of the same deal is either already committed and seen, or waits for this transaction.
    this.addSql(`create function crm_refresh_closes(ids uuid[]) returns void language plpgsql as $$
    declare
      relevant uuid[];
    begin
      if coalesce(cardinality(ids), 0) = 0 then return; end if;
      perform 1 from deals where id = any(ids) order by id for no key update;
      select array_agg(d.id) into relevant from deals d join pipeline_stages s on s.id = d.stage_id
       where d.id = any(ids) and (s.stage_type <> 'open' or exists (select 1 from deal_closes f where f.deal_id = d.id));
      if relevant is null then return; end if;
      delete from deal_closes where deal_id = any(relevant);
      insert into deal_closes (deal_id, org_id, closed_at, won, lead_source, cycle_seconds, activities, ${TRAITS.join(', ')})
      select d.id, d.org_id, c.closed_at, s.stage_type = 'won', coalesce(d.lead_source, ''),
             extract(epoch from c.closed_at - d.created_at),
             (select count(*) from activities a where a.deal_id = d.id and a.type <> 'deal_analyzed'),
             coalesce(p.eb, false), coalesce(p.champion, false), p.people >= 3, coalesce(p.positive, false),
             d.expected_close_date is not null,
             coalesce(p.competitor, false) or coalesce(d.notes ~* crm_signal_pattern('competitor'), false),
             coalesce(p.negative, false)
        from deals d
        join pipeline_stages s on s.id = d.stage_id and s.stage_type in ('won', 'lost')
        -- A deal closes when it moves to a won or lost stage (its last stage_changed), or it was created closed.
        cross join lateral (select coalesce(max(a.created_at), d.created_at) as closed_at from activities a
                             where a.deal_id = d.id and a.type = 'stage_changed') c
        cross join lateral (
          select bool_or(ct.role_type = 'economic_buyer' and ct.engagement_level in ('high', 'medium')) as eb,
                 bool_or(ct.role_type = 'champion' and ct.engagement_level in ('high', 'medium')) as champion,
                 count(*) as people,
                 bool_or(ct.sentiment = 'positive') as positive,
                 bool_or(ct.sentiment = 'negative' or ct.role_type = 'blocker') as negative,
                 bool_or(ct.notes ~* crm_signal_pattern('competitor')) as competitor
            from contacts ct where ct.deal_id = d.id) p
       where d.id = any(relevant) and c.closed_at > now() - interval '${CLOSE_KEEP_DAYS} days';
    end
    $$;`);
    this.addSql(`create function crm_count_closes() returns trigger language plpgsql as $$
    begin
      ${SKIP_WHILE_DELETING_ORG}
      if tg_op = 'INSERT' then ${countCloses('select *, 1 as sign from new_rows')}
      elsif tg_op = 'DELETE' then ${countCloses('select *, -1 as sign from old_rows')}
      else ${countCloses('select *, 1 as sign from new_rows union all select *, -1 from old_rows')}
      end if;
      return null;
    end
    $$;`);
    for (const sql of statementTriggers('deal_closes', 'crm_count_closes', ['insert', 'delete', 'update']))
      this.addSql(sql);

    // ---- deals -----------------------------------------------------------------------------------------
    this.addSql(`create function crm_deal_creation_signals() returns trigger language plpgsql as $$
    begin
      new.creation_signals := crm_text_signals(new.notes);
      return new;
    end
    $$;`);
    this.addSql(`create trigger deals_creation_signals before insert on deals for each row
      when (new.notes is not null and new.created_at > now() - interval '${SIGNAL_KEEP_DAYS} days')
      execute function crm_deal_creation_signals();`);
    this.addSql(`create function crm_deals_written() returns trigger language plpgsql as $$
    begin
      ${SKIP_WHILE_DELETING_ORG}
      if tg_op = 'INSERT' then
        -- A new deal has no stage moves yet: it closed when it was created.
        perform crm_refresh_closes(array(select n.id from new_rows n join pipeline_stages s on s.id = n.stage_id
          where s.stage_type <> 'open' and n.created_at > now() - interval '${CLOSE_KEEP_DAYS} days'));
        ${countSignals(creationSignals('new_rows', 1))}
      else
        ${countSignals(creationSignals('old_rows', -1))}
      end if;
      return null;
    end
    $$;`);
    for (const sql of statementTriggers('deals', 'crm_deals_written', ['insert', 'delete'])) this.addSql(sql);
    this.addSql(`create function crm_deal_changed() returns trigger language plpgsql as $$
    begin
      ${SKIP_WHILE_DELETING_ORG}
      perform crm_refresh_closes(array[new.id]);
      if (old.org_id, old.created_at, old.creation_signals) is distinct from (new.org_id, new.created_at, new.creation_signals) then
        ${countSignals(`select old.org_id as org_id, old.created_at as at, old.creation_signals as s, -1 as sign
                         union all select new.org_id, new.created_at, new.creation_signals, 1`)}
      end if;
      return null;
    end
    $$;`);
    this.addSql(`create trigger deals_analytics_update
      after update of org_id, stage_id, lead_source, notes, expected_close_date, created_at, creation_signals on deals
      for each row when ((old.org_id, old.stage_id, old.lead_source, old.notes, old.expected_close_date, old.created_at, old.creation_signals)
                         is distinct from (new.org_id, new.stage_id, new.lead_source, new.notes, new.expected_close_date, new.created_at, new.creation_signals))
      execute function crm_deal_changed();`);

    // ---- activities ------------------------------------------------------------------------------------
    this.addSql(`create function crm_classify_activity() returns trigger language plpgsql as $$
    begin
      new.signals := case when new.created_at > now() - interval '${SIGNAL_KEEP_DAYS} days'
                          then crm_activity_signals(new.org_id, new.type, new.description, new.changes) else 0 end;
      return new;
    end
    $$;`);
    // An activity older than the window when written (an import's history) is never read: not classified.
    this.addSql(`create trigger activities_classified before insert on activities for each row
      when (new.created_at > now() - interval '${SIGNAL_KEEP_DAYS} days') execute function crm_classify_activity();`);
    this.addSql(`create trigger activities_reclassified before update of org_id, type, description, changes, created_at
      on activities for each row execute function crm_classify_activity();`);
    this.addSql(`create function crm_activities_written() returns trigger language plpgsql as $$
    begin
      ${SKIP_WHILE_DELETING_ORG}
      if tg_op = 'INSERT' then
        perform crm_refresh_closes(array(select distinct deal_id from new_rows where type <> 'deal_analyzed'));
        ${countSignals(activitySignals('new_rows', 1))}
      elsif tg_op = 'DELETE' then
        perform crm_refresh_closes(array(select distinct deal_id from old_rows where type <> 'deal_analyzed'));
        ${countSignals(activitySignals('old_rows', -1))}
      else
        perform crm_refresh_closes(array(select deal_id from new_rows union select deal_id from old_rows));
        ${countSignals(`${activitySignals('new_rows', 1)} union all ${activitySignals('old_rows', -1)}`)}
      end if;
      return null;
    end
    $$;`);
    for (const sql of statementTriggers('activities', 'crm_activities_written', [
      'insert',
      'delete',
      'update',
    ]))
      this.addSql(sql);

    // ---- contacts --------------------------------------------------------------------------------------
    const negative = (c: string) =>
      `coalesce(${c}.sentiment = 'negative' or ${c}.role_type = 'blocker', false)`;
    const countNegative = (rows: string, sign: string) => `
      update deals d set negative_stakeholders = d.negative_stakeholders ${sign} x.n
        from (select deal_id, count(*)::int as n from ${rows} c where ${negative('c')} group by deal_id) x
       where d.id = x.deal_id;`;
    this.addSql(`create function crm_contacts_written() returns trigger language plpgsql as $$
    begin
      ${SKIP_WHILE_DELETING_ORG}
      -- The deals first, locked in id order by the refresh; then their counts.
      if tg_op = 'INSERT' then
        perform crm_refresh_closes(array(select distinct deal_id from new_rows));
        ${countNegative('new_rows', '+')}
      else
        perform crm_refresh_closes(array(select distinct deal_id from old_rows));
        ${countNegative('old_rows', '-')}
      end if;
      return null;
    end
    $$;`);
    for (const sql of statementTriggers('contacts', 'crm_contacts_written', ['insert', 'delete']))
      this.addSql(sql);
    this.addSql(`create function crm_contact_changed() returns trigger language plpgsql as $$
    begin
      ${SKIP_WHILE_DELETING_ORG}
      perform crm_refresh_closes(array[old.deal_id, new.deal_id]);
      if old.deal_id is distinct from new.deal_id or ${negative('old')} <> ${negative('new')} then
        if ${negative('old')} then
          update deals set negative_stakeholders = negative_stakeholders - 1 where id = old.deal_id;
        end if;
        if ${negative('new')} then
          update deals set negative_stakeholders = negative_stakeholders + 1 where id = new.deal_id;
        end if;
      end if;
      return null;
    end
    $$;`);
    this.addSql(`create trigger contacts_analytics_update
      after update of deal_id, role_type, engagement_level, sentiment, notes on contacts
      for each row when ((old.deal_id, old.role_type, old.engagement_level, old.sentiment, old.notes)
                         is distinct from (new.deal_id, new.role_type, new.engagement_level, new.sentiment, new.notes))
      execute function crm_contact_changed();`);

    // ---- what there is already (after the triggers: they count what the updates below classify) -------
    this.addSql(`update deals d set negative_stakeholders = x.n
      from (select deal_id, count(*)::int as n from contacts c where ${negative('c')} group by deal_id) x
     where d.id = x.deal_id;`);
    // The notes a recent deal was created with: its first notes change's old value, else its notes now.
    this.addSql(`update deals d set creation_signals = x.s
      from (select id, crm_text_signals(coalesce(
              (select coalesce(n.changes->'notes'->>'from', '') from activities n
                where n.deal_id = r.id and n.type = 'deal_updated' and n.changes->'notes' is not null
                order by n.created_at limit 1), r.notes)) as s
              from deals r where r.created_at > now() - interval '${SIGNAL_KEEP_DAYS} days') x
     where d.id = x.id and x.s <> 0;`);
    this.addSql(`update activities set signals = x.s
      from (select id, crm_activity_signals(org_id, type, description, changes) as s from activities
             where created_at > now() - interval '${SIGNAL_KEEP_DAYS} days') x
     where activities.id = x.id and x.s <> 0;`);
    // Closed deals that closed (a stage move, or created closed) in the last 91 days.
    this.addSql(`select crm_refresh_closes(array(
      select d.id from deals d join pipeline_stages s on s.id = d.stage_id
       where s.stage_type <> 'open' and d.created_at > now() - interval '${CLOSE_KEEP_DAYS} days'
      union
      select a.deal_id from activities a
       where a.type = 'stage_changed' and a.created_at > now() - interval '${CLOSE_KEEP_DAYS} days'));`);
    this.addSql('select crm_fold_kept_sums();');

    // Health and the at-risk count read the recent open deals from this index alone.
    this.addSql('drop index deals_org_stage_active;');
    this.addSql(`create index deals_org_stage_active on deals (org_id, stage_id, (coalesce(last_activity_at, created_at)), id)
      include (last_activity_at, created_at, expected_close_date, deal_health, negative_stakeholders);`);
    // A new expression index has no statistics until the table is analyzed: the planner took it for the
    // whole stage and read 400,000 rows at a million deals.
    this.addSql('analyze deals;');
  }
}
