import { createOrganizationWithKey } from '@crm/api';
import { type DatabaseConfig, openDatabase } from '@crm/db';

export interface AiSeed {
  apiKey: string;
  /** The deal with 20 stakeholders and 200 activities that analyze and predict are timed on. */
  bigDealId: string;
  deals: number;
  closed: number;
}

const NOTES = [
  'Pain: manual reconciliation takes two days a month',
  'Great call, they are excited about the pilot',
  'Competitor Globex is also evaluating',
  'Concerns about price; they want to postpone',
  'Evaluation criteria agreed: SSO and audit log',
  'Legal review of the contract started',
  'Weekly sync held, next step scheduled',
];
const ROLES = [
  'economic_buyer',
  'champion',
  'technical_buyer',
  'end_user',
  'influencer',
  'blocker',
  'unknown',
];
const LEVELS = ['high', 'medium', 'low', 'unknown'];
const SENTIMENTS = ['positive', 'neutral', 'negative', 'unknown'];
const words = (list: readonly string[]) =>
  `array[${list.map((w) => `'${w.replaceAll("'", "''")}'`).join(', ')}]`;
const pick = (list: readonly string[], expr: string) => `(${words(list)})[1 + ((${expr}) % ${list.length})]`;

/**
 * One organization with `deals` deals in set-based SQL: 60% open across the four open stages, 20% won and
 * 20% lost (each with its closing stage move), two contacts each, a creation activity and three notes
 * changes per deal spread over the last months, a logged call and a task (open past due for one deal in ten);
 * plus one deal with 20 stakeholders, 200 activities and 220 logged ones.
 */
export async function seedAiOrganization(database: DatabaseConfig, deals: number): Promise<AiSeed> {
  const db = await openDatabase(database, 'bench-seed');
  try {
    const conn = db.orm.em.getConnection();
    const created = await createOrganizationWithKey(db.orm.em.fork(), 'AI bench organization');
    const org = created.org_id;
    const stages = await conn.execute<
      { id: string; name: string; pipeline_id: string; stage_type: string }[]
    >(
      `select s.id, s.name, s.pipeline_id, s.stage_type from pipeline_stages s join pipelines p on p.id = s.pipeline_id
        where p.org_id = ? and p.is_default order by s.position`,
      [org],
    );
    const open = stages.filter((s) => s.stage_type === 'open');
    const won = stages.find((s) => s.stage_type === 'won');
    const lost = stages.find((s) => s.stage_type === 'lost');
    const pipeline = stages[0]?.pipeline_id;
    if (!won || !lost || !pipeline || open.length < 4) throw new Error('unexpected default pipeline');
    const stageOf = `case when g % 10 < 6 then (array[${open.map((s) => `'${s.id}'::uuid`).join(', ')}])[1 + g % ${open.length}]
      when g % 10 < 8 then '${won.id}'::uuid else '${lost.id}'::uuid end`;
    await conn.execute(
      `insert into deals (id, org_id, title, company_name, value, currency, lifecycle_stage, pipeline_id, stage_id,
                          notes, lead_source, expected_close_date, last_activity_at, created_at, updated_at)
       select gen_random_uuid(), ?, 'Deal ' || g, 'Company ' || (g % 500), (g * 7919) % 200000 + 1000, 'USD', 'opportunity', ?,
              ${stageOf}, ${pick(NOTES, 'g')}, ${pick(['referral', 'website', 'outbound', 'event'], 'g / 3')},
              now() + ((g % 90) - 30) * interval '1 day', now() - (g % 40) * interval '1 day',
              now() - (g % 300 + 60) * interval '1 day', now() - (g % 80) * interval '1 day'
         from generate_series(1, ${Math.trunc(deals)}) g`,
      [org, pipeline],
    );
    await conn.execute(
      `insert into contacts (id, org_id, deal_id, name, role_type, influence_level, engagement_level, sentiment, created_at)
       select gen_random_uuid(), d.org_id, d.id, 'Person ' || d.rn || '-' || n,
              ${pick(ROLES, 'd.rn + n * 3')}, ${pick(['high', 'medium', 'low'], 'd.rn + n')},
              ${pick(LEVELS, 'd.rn * 3 + n')}, ${pick(SENTIMENTS, 'd.rn * 5 + n')}, d.created_at + n * interval '1 day'
         from (select id, org_id, created_at, row_number() over (order by id) as rn from deals where org_id = ?) d
         cross join generate_series(1, 2) n`,
      [org],
    );
    await conn.execute(
      `insert into activities (id, org_id, deal_id, type, description, changes, created_at)
       select gen_random_uuid(), org_id, id, 'deal_created', 'Deal created', null, created_at from deals where org_id = ?
       union all
       select gen_random_uuid(), d.org_id, d.id, 'deal_updated', 'Updated notes',
              jsonb_build_object('notes', jsonb_build_object('from', null, 'to', ${pick(NOTES, 'd.rn + n')})),
              least(now(), d.created_at + n * interval '9 days')
         from (select id, org_id, created_at, row_number() over (order by id) as rn from deals where org_id = ?) d
         cross join generate_series(1, 3) n`,
      [org, org],
    );
    await conn.execute(
      `insert into activities (id, org_id, deal_id, type, description, changes, created_at)
       select gen_random_uuid(), d.org_id, d.id, 'stage_changed', 'Stage changed',
              jsonb_build_object('stage', jsonb_build_object('from', 'Negotiation', 'to', s.name)), d.updated_at
         from deals d join pipeline_stages s on s.id = d.stage_id
        where d.org_id = ? and s.stage_type <> 'open'`,
      [org],
    );
    const [big] = await conn.execute<{ id: string }[]>(
      `insert into deals (id, org_id, title, company_name, value, currency, lifecycle_stage, pipeline_id, stage_id, notes,
                          expected_close_date, last_activity_at, created_at)
       values (gen_random_uuid(), ?, 'Big enterprise rollout', 'Massive Dynamic', 480000, 'USD', 'opportunity', ?, ?,
               'Pain: three regional systems; evaluation criteria agreed; legal review next', now() + interval '25 days',
               now() - interval '1 day', now() - interval '120 days')
       returning id`,
      [org, pipeline, open[2]?.id],
    );
    if (!big) throw new Error('the big deal was not created');
    await conn.execute(
      `insert into contacts (id, org_id, deal_id, name, title, role_type, influence_level, engagement_level, sentiment, notes, created_at)
       select gen_random_uuid(), ?, ?, 'Stakeholder ' || n, 'Title ' || n, ${pick(ROLES, 'n')},
              ${pick(['high', 'medium', 'low'], 'n')}, ${pick(LEVELS, 'n * 3')}, ${pick(SENTIMENTS, 'n * 7')},
              ${pick(NOTES, 'n')}, now() - (120 - n) * interval '1 day'
         from generate_series(1, 20) n`,
      [org, big.id],
    );
    await conn.execute(
      `insert into activities (id, org_id, deal_id, type, description, changes, created_at)
       select gen_random_uuid(), ?, ?, 'deal_updated', 'Updated notes',
              jsonb_build_object('notes', jsonb_build_object('from', null, 'to', ${pick(NOTES, 'n')})),
              now() - (200 - n) * interval '12 hours'
         from generate_series(1, 200) n`,
      [org, big.id],
    );
    // Logged activities (the relationship graph the AI reads): per deal a call its first contact took part
    // in and a task, open and past due for one deal in ten; the big deal 200 calls and meetings with its
    // people and 20 tasks, 5 of them overdue.
    await conn.execute(
      `create temporary table bench_logged as
       select gen_random_uuid() as id, d.id as deal_id, f.contact_id,
              n, d.rn, least(now() - interval '1 hour', d.created_at + (5 + n * 3) * interval '1 day') as at
         from (select id, created_at, row_number() over (order by id) as rn from deals where org_id = ?) d
         left join (select distinct on (deal_id) deal_id, id as contact_id from contacts where org_id = ?
                     order by deal_id, id) f on f.deal_id = d.id
         cross join generate_series(1, 2) n`,
      [org, org],
    );
    await conn.execute(
      `insert into bench_logged
       select gen_random_uuid(), ?::uuid, c.id, case when n <= 20 then 2 else 1 end, n, now() - (240 - n) * interval '11 hours'
         from generate_series(1, 220) n
         join (select id, row_number() over (order by id) - 1 as k from contacts where deal_id = ?::uuid) c on c.k = n % 20`,
      [big.id, big.id],
    );
    await conn.execute(
      `insert into engagements (id, org_id, type, subject, body, occurred_at, due_at, status, completed_at, created_at)
       select id, ?::uuid, case when n = 2 then 'task' when rn % 2 = 0 then 'call' else 'meeting' end,
              case when n = 2 then 'Send the proposal' else 'Check-in' end,
              case when n = 2 then null else ${pick(NOTES, 'rn')} end,
              at, case when n = 2 then at + interval '7 days' end,
              case when n = 2 then case when rn % 10 = 0 then 'open' else 'done' end end,
              case when n = 2 and rn % 10 <> 0 then at + interval '6 days' end, at
         from bench_logged`,
      [org],
    );
    await conn.execute(
      `insert into engagement_links (engagement_id, org_id, target_type, target_id, participant, occurred_at)
       select id, ?::uuid, 'deal', deal_id, false, at from bench_logged
       union all
       select id, ?::uuid, 'contact', contact_id, true, at from bench_logged where n = 1 and contact_id is not null`,
      [org, org],
    );
    await conn.execute('drop table bench_logged');
    await conn.execute('analyze');
    return { apiKey: created.api_key, bigDealId: big.id, deals: deals + 1, closed: Math.round(deals * 0.4) };
  } finally {
    await db.close();
  }
}
