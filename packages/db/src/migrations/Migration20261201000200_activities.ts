import { Migration } from '@mikro-orm/migrations';

/**
 * Activities people log (docs/api/activities.md): notes, tasks, calls, meetings and e-mails, each linked to
 * the deals, contacts and companies it concerns.
 *
 * Why tables of their own, not rows of `activities`: `activities` is the system's record of what a write
 * did to one deal (deal_created, stage_changed, deal_updated with its field changes, …), one deal per row
 * (`deal_id not null`), append-only, and the analytics read it by triggers (signals, the closes' activity
 * counts). A logged activity is another fact: written by a person, changed and deleted later, on any
 * number of deals, contacts and companies, or on none of them after they are deleted. Put into
 * `activities` it would need a row per linked deal (a fact many times over) and would change what the
 * analytics count. So: `engagements` (the CRM word for a logged interaction) holds each activity once, and
 * `engagement_links` its links; the deal's `recent_activities`, its timeline and `last_activity_at` read
 * both tables (the API calls both "activities").
 *
 * - `engagements.occurred_at`: when it happened; a task's is its creation time (a task has `due_at`,
 *   `status` and `completed_at` instead). The list, the timeline and `recent_activities` order by it.
 * - `engagement_links`: one row per activity and linked record (`target_type`, `target_id`); `participant`
 *   marks a contact who took part. `occurred_at` is the activity's, copied so that one index
 *   (`engagement_links_target`: org_id, target_id, occurred_at desc, engagement_id desc) reads a record's
 *   activities newest first from any cursor, however many the organization has: the copy is written only
 *   with the activity's own (the service updates both in one statement).
 * - Links have no foreign key (a link names one of three tables); the triggers below delete a deal's,
 *   contact's or company's links with it (also when a deal's deletion takes its contacts). An activity
 *   whose links are all gone stays: it is still found by `GET /activities` and by id.
 */
export class Migration20261201000200_activities extends Migration {
  override name = 'Migration20261201000200_activities';

  override up(): void {
    this.addSql(`create table engagements (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      type text not null check (type in ('note', 'task', 'call', 'meeting', 'email')),
      subject text not null,
      body text null,
      occurred_at timestamptz not null,
      due_at timestamptz null,
      status text null check (status in ('open', 'done')),
      completed_at timestamptz null,
      created_at timestamptz not null,
      updated_at timestamptz null,
      constraint engagements_task_fields check (
        case when type = 'task' then status is not null
             else status is null and due_at is null and completed_at is null end));`);
    // GET /activities without a link filter (and with type, status or due_before: filtered on the way).
    this.addSql('create index engagements_org_recent on engagements (org_id, occurred_at desc, id desc);');
    // type= (tasks with status= and due_before= too): the type's rows alone, newest first.
    this.addSql(
      'create index engagements_org_type_recent on engagements (org_id, type, occurred_at desc, id desc);',
    );

    this.addSql(`create table engagement_links (
      engagement_id uuid not null references engagements (id) on delete cascade,
      org_id uuid not null references organizations (id) on delete cascade,
      target_type text not null check (target_type in ('deal', 'contact', 'company')),
      target_id uuid not null,
      participant boolean not null default false,
      occurred_at timestamptz not null,
      primary key (engagement_id, target_id),
      constraint engagement_links_participant check (not participant or target_type = 'contact'));`);
    // deal_id=, contact_id=, company_id=, the deal's timeline and recent_activities; the link cleanup.
    this.addSql(
      'create index engagement_links_target on engagement_links (org_id, target_id, occurred_at desc, engagement_id desc);',
    );

    // A deleted deal, contact or company takes its links (not while its whole organization is deleted).
    this.addSql(`create function crm_unlink_engagements() returns trigger language plpgsql as $$
    begin
      if coalesce(current_setting('crm.deleting_org', true), '') <> '' then return null; end if;
      delete from engagement_links l using old_rows o where l.org_id = o.org_id and l.target_id = o.id;
      return null;
    end
    $$;`);
    for (const table of ['deals', 'contacts', 'companies'])
      this.addSql(`create trigger ${table}_unlink_engagements after delete on ${table}
        referencing old table as old_rows for each statement execute function crm_unlink_engagements();`);
  }
}
