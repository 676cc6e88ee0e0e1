import type { DealHistory, StageFacts } from '@crm/ai';
import { HISTORY_DAYS, HISTORY_MAX_DEALS, SYSTEM_ACTIVITY_TYPES } from '@crm/ai';
import type { EntityManager } from '@crm/db';
import { currentOrg } from '../../org-scope.ts';
import { asJson, orgRows } from '../../read-model.ts';
import { ACTIVE_AT, stagesOfType } from '../pipeline/open-pipeline.sql.ts';
import { asDate, asDateOrNull } from './rows.ts';

interface DealRow {
  id: string;
  title: string;
  company_name: string | null;
  value: string | number | null;
  currency: string | null;
  notes: string | null;
  lead_source: string | null;
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

const DEAL_COLUMNS = `d.id, d.title, d.company_name, d.value, d.currency, d.notes, d.lead_source, d.expected_close_date, d.created_at,
  d.pipeline_id, s.name as stage_name`;
/** The AI's own entries (analyses) are no history of the deal: left out before they are read. */
const CUSTOMER_ACTIVITY = `a.type not in (${[...SYSTEM_ACTIVITY_TYPES].map((t) => `'${t}'`).join(', ')})`;

/**
 * A deal with its contacts and activity log as JSON lists, one row per deal: on the embedded database
 * every round trip costs a few milliseconds.
 */
const historySelect = (extraColumns = '') => `select ${DEAL_COLUMNS},${extraColumns}
     (select coalesce(json_agg(json_build_object('id', c.id, 'deal_id', c.deal_id, 'name', c.name, 'title', c.title,
               'role_type', c.role_type, 'influence_level', c.influence_level, 'engagement_level', c.engagement_level,
               'sentiment', c.sentiment, 'notes', c.notes, 'created_at', c.created_at)), '[]'::json)
        from contacts c where c.deal_id = d.id and c.org_id = d.org_id) as contacts,
     (select coalesce(json_agg(json_build_object('deal_id', a.deal_id, 'type', a.type, 'description', a.description,
               'contact_id', a.contact_id, 'changes', a.changes, 'created_at', a.created_at) order by a.created_at, a.id),
               '[]'::json)
        from activities a where a.deal_id = d.id and a.org_id = d.org_id and ${CUSTOMER_ACTIVITY}) as activities
   from deals d join pipeline_stages s on s.id = d.stage_id`;

type HistoryRow = DealRow & { contacts: unknown; activities: unknown };

function historyOf(row: HistoryRow, stagesOf: Map<string, StageFacts[]>): DealHistory {
  const contacts = asJson<ContactRow[]>(row.contacts);
  const activities = asJson<ActivityRow[]>(row.activities);
  return {
    deal: {
      id: row.id,
      title: row.title,
      companyName: row.company_name,
      value: row.value == null ? null : Number(row.value),
      currency: row.currency,
      notes: row.notes,
      leadSource: row.lead_source,
      expectedCloseDate: asDateOrNull(row.expected_close_date),
      createdAt: asDate(row.created_at),
    },
    stages: stagesOf.get(row.pipeline_id) ?? [],
    stageName: row.stage_name,
    contacts: contacts.map((c) => ({
      id: c.id,
      name: c.name,
      title: c.title,
      role: c.role_type,
      influence: c.influence_level,
      engagement: c.engagement_level,
      sentiment: c.sentiment,
      notes: c.notes,
      createdAt: asDate(c.created_at),
    })),
    activities: activities.map((a) => ({
      type: a.type,
      at: asDate(a.created_at),
      description: a.description,
      contactId: a.contact_id,
      changes: a.changes == null ? null : asJson(a.changes),
    })),
  };
}

/** The organization's stages by pipeline, in order. */
async function stagesByPipeline(em: EntityManager): Promise<Map<string, StageFacts[]>> {
  const rows = await orgRows<StageRow>(
    em,
    `select s.pipeline_id, s.name, s.stage_type, s.position, s.probability from pipeline_stages s
      where s.org_id = ? order by s.position`,
  );
  const map = new Map<string, StageFacts[]>();
  for (const r of rows) {
    const list = map.get(r.pipeline_id) ?? [];
    list.push({ name: r.name, type: r.stage_type, position: r.position, probability: r.probability });
    map.set(r.pipeline_id, list);
  }
  return map;
}

/** One deal's history (its pipeline, contacts and activity log), or undefined when it is not the caller's. */
export async function loadDealHistory(em: EntityManager, dealId: string): Promise<DealHistory | undefined> {
  const [row] = await orgRows<HistoryRow & { stages: unknown }>(
    em,
    `${historySelect(`
       (select json_agg(json_build_object('pipeline_id', ps.pipeline_id, 'name', ps.name, 'stage_type', ps.stage_type,
             'position', ps.position, 'probability', ps.probability) order by ps.position)
          from pipeline_stages ps where ps.pipeline_id = d.pipeline_id) as stages,`)}
      where d.org_id = ? and d.id = ?`,
    [dealId],
  );
  if (!row) return undefined;
  const stages = asJson<StageRow[]>(row.stages ?? '[]').map((r) => ({
    name: r.name,
    type: r.stage_type,
    position: r.position,
    probability: r.probability,
  }));
  return historyOf(row, new Map([[row.pipeline_id, stages]]));
}

/** Closed deals are read for a fit in pages of this many, so other requests' queries run in between. */
const HISTORY_PAGE = 250;

/**
 * The histories of the organization's recent closed deals, for fitting its win model: the HISTORY_MAX_DEALS
 * closed deals with the latest activity (a close is one) within HISTORY_DAYS, the clock the model's
 * fingerprint watches (win-models.ts), so scoring a deal changes neither. They are picked down the
 * (org_id, stage_id, last activity) index of each closed stage, then their histories are read page by page,
 * by id: on the embedded (single-threaded) database one large read would hold every request behind it.
 */
export async function loadClosedHistories(em: EntityManager): Promise<DealHistory[]> {
  const stagesOf = await stagesByPipeline(em);
  const chosen = await orgRows<{ id: string }>(
    em,
    `with stages as (${stagesOfType('won', 'lost')})
     select x.id from stages s cross join lateral (
       select d.id, ${ACTIVE_AT} as at from deals d
        where d.org_id = ? and d.stage_id = s.id and ${ACTIVE_AT} > now() - make_interval(days => ${HISTORY_DAYS})
        order by ${ACTIVE_AT} desc, d.id desc limit ${HISTORY_MAX_DEALS}) x
      order by x.at desc, x.id desc limit ${HISTORY_MAX_DEALS}`,
    [currentOrg(em)],
  );
  const histories: DealHistory[] = [];
  for (let start = 0; start < chosen.length; start += HISTORY_PAGE) {
    const ids = chosen.slice(start, start + HISTORY_PAGE).map((r) => r.id);
    const rows = await orgRows<HistoryRow>(
      em,
      `${historySelect()} where d.org_id = ? and s.stage_type <> 'open' and d.id in (${ids.map(() => '?').join(', ')})`,
      ids,
    );
    const byId = new Map(rows.map((row) => [row.id, row]));
    // In the chosen order; a deal deleted or reopened since is left out.
    for (const id of ids) {
      const row = byId.get(id);
      if (row) histories.push(historyOf(row, stagesOf));
    }
  }
  return histories;
}
