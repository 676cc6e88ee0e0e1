import type { DealHistory, StageFacts } from '@crm/ai';
import { HISTORY_DAYS, HISTORY_MAX_DEALS, SYSTEM_ACTIVITY_TYPES } from '@crm/ai';
import type { EntityManager } from '@crm/db';
import { currentOrg, orgRows } from '../../read-model.ts';
import { asDate, asDateOrNull, asJson } from './rows.ts';

interface DealRow {
  id: string;
  title: string;
  company_name: string | null;
  value: string | number | null;
  currency: string | null;
  notes: string | null;
  expected_close_date: unknown;
  created_at: unknown;
  pipeline_id: string;
  stage_name: string;
}
interface StageRow {
  pipeline_id: string;
  name: string;
  stage_type: StageFacts['type'];
  position: number;
  probability: number | null;
}
interface ContactRow {
  id: string;
  deal_id: string;
  name: string;
  title: string | null;
  role_type: string;
  influence_level: string | null;
  engagement_level: string | null;
  sentiment: string | null;
  notes: string | null;
  created_at: unknown;
}
interface ActivityRow {
  deal_id: string;
  type: string;
  description: string | null;
  contact_id: string | null;
  changes: unknown;
  created_at: unknown;
}

const DEAL_COLUMNS = `d.id, d.title, d.company_name, d.value, d.currency, d.notes, d.expected_close_date, d.created_at,
  d.pipeline_id, s.name as stage_name`;
const CONTACT_COLUMNS = `c.id, c.deal_id, c.name, c.title, c.role_type, c.influence_level, c.engagement_level, c.sentiment,
  c.notes, c.created_at`;
const ACTIVITY_COLUMNS = 'a.deal_id, a.type, a.description, a.contact_id, a.changes, a.created_at';
/** The AI's own entries (analyses) are no history of the deal: left out before they are read. */
const CUSTOMER_ACTIVITY = `a.type not in (${[...SYSTEM_ACTIVITY_TYPES].map((t) => `'${t}'`).join(', ')})`;

/** Joins the rows of several deals into their histories. */
function assemble(
  deals: DealRow[],
  stages: StageRow[],
  contacts: ContactRow[],
  activities: ActivityRow[],
): DealHistory[] {
  const stagesOf = new Map<string, StageFacts[]>();
  for (const s of stages) {
    const list = stagesOf.get(s.pipeline_id) ?? [];
    list.push({ name: s.name, type: s.stage_type, position: s.position, probability: s.probability });
    stagesOf.set(s.pipeline_id, list);
  }
  const byDeal = new Map<string, DealHistory>();
  for (const d of deals)
    byDeal.set(d.id, {
      deal: {
        id: d.id,
        title: d.title,
        companyName: d.company_name,
        value: d.value == null ? null : Number(d.value),
        currency: d.currency,
        notes: d.notes,
        expectedCloseDate: asDateOrNull(d.expected_close_date),
        createdAt: asDate(d.created_at),
      },
      stages: (stagesOf.get(d.pipeline_id) ?? []).sort((a, b) => a.position - b.position),
      stageName: d.stage_name,
      contacts: [],
      activities: [],
    });
  for (const c of contacts)
    byDeal.get(c.deal_id)?.contacts.push({
      id: c.id,
      name: c.name,
      title: c.title,
      role: c.role_type,
      influence: c.influence_level,
      engagement: c.engagement_level,
      sentiment: c.sentiment,
      notes: c.notes,
      createdAt: asDate(c.created_at),
    });
  for (const a of activities)
    byDeal.get(a.deal_id)?.activities.push({
      type: a.type,
      at: asDate(a.created_at),
      description: a.description,
      contactId: a.contact_id,
      changes: a.changes == null ? null : asJson(a.changes),
    });
  return [...byDeal.values()];
}

/**
 * One deal's history (its pipeline, contacts and activity log), or undefined when it is not the caller's.
 * One statement with the lists as JSON: on the embedded database every round trip costs a few milliseconds.
 */
export async function loadDealHistory(em: EntityManager, dealId: string): Promise<DealHistory | undefined> {
  const [row] = await orgRows<DealRow & { stages: unknown; contacts: unknown; activities: unknown }>(
    em,
    `select ${DEAL_COLUMNS},
       (select json_agg(json_build_object('pipeline_id', ps.pipeline_id, 'name', ps.name, 'stage_type', ps.stage_type,
                 'position', ps.position, 'probability', ps.probability))
          from pipeline_stages ps where ps.pipeline_id = d.pipeline_id) as stages,
       (select coalesce(json_agg(json_build_object('id', c.id, 'deal_id', c.deal_id, 'name', c.name, 'title', c.title,
                 'role_type', c.role_type, 'influence_level', c.influence_level, 'engagement_level', c.engagement_level,
                 'sentiment', c.sentiment, 'notes', c.notes, 'created_at', c.created_at)), '[]'::json)
          from contacts c where c.deal_id = d.id and c.org_id = d.org_id) as contacts,
       (select coalesce(json_agg(json_build_object('deal_id', a.deal_id, 'type', a.type, 'description', a.description,
                 'contact_id', a.contact_id, 'changes', a.changes, 'created_at', a.created_at) order by a.created_at, a.id),
                 '[]'::json)
          from activities a where a.deal_id = d.id and a.org_id = d.org_id and ${CUSTOMER_ACTIVITY}) as activities
     from deals d join pipeline_stages s on s.id = d.stage_id
    where d.org_id = ? and d.id = ?`,
    [dealId],
  );
  if (!row) return undefined;
  return assemble(
    [row],
    asJson<StageRow[]>(row.stages ?? '[]'),
    asJson<ContactRow[]>(row.contacts),
    asJson<ActivityRow[]>(row.activities),
  )[0];
}

/** The organization's closed deals the win model learns from: the newest, closed within the history window. */
const CLOSED_DEALS = `select d.id from deals d join pipeline_stages s on s.id = d.stage_id
   where d.org_id = ? and s.stage_type <> 'open'
     and coalesce(d.updated_at, d.created_at) > now() - make_interval(days => ${HISTORY_DAYS})
   order by coalesce(d.updated_at, d.created_at) desc limit ${HISTORY_MAX_DEALS}`;

/** The histories of the organization's recent closed deals, for fitting its win model. */
export async function loadClosedHistories(em: EntityManager): Promise<DealHistory[]> {
  const deals = await orgRows<DealRow>(
    em,
    `select ${DEAL_COLUMNS} from deals d join pipeline_stages s on s.id = d.stage_id
      where d.org_id = ? and d.id in (${CLOSED_DEALS})`,
    [currentOrg(em)],
  );
  if (deals.length === 0) return [];
  // Each statement takes the organization first, then again for the closed-deal subquery.
  const [stages, contacts, activities] = await Promise.all([
    orgRows<StageRow>(
      em,
      'select s.pipeline_id, s.name, s.stage_type, s.position, s.probability from pipeline_stages s where s.org_id = ?',
    ),
    orgRows<ContactRow>(
      em,
      `select ${CONTACT_COLUMNS} from contacts c where c.org_id = ? and c.deal_id in (${CLOSED_DEALS})`,
      [currentOrg(em)],
    ),
    orgRows<ActivityRow>(
      em,
      `select ${ACTIVITY_COLUMNS} from activities a where a.org_id = ? and a.deal_id in (${CLOSED_DEALS}) and ${CUSTOMER_ACTIVITY}`,
      [currentOrg(em)],
    ),
  ]);
  return assemble(deals, stages, contacts, activities);
}
