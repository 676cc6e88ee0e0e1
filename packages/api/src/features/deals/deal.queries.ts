import type { Deal, EntityManager } from '@crm/db';
import type { z } from 'zod';
import { afterCursor, asJson, currentOrg, isoSql, numberOrNull, orgRows } from '../../read-model.ts';
import { toIso } from '../../schemas.ts';
import type { StageRow } from '../pipeline/stages.service.ts';
import type { Activity, DealDto, DealListQuery, Stakeholder } from './deal.schemas.ts';

const DEAL_COLUMNS = `d.id, d.title, d.company_name, d.value, d.currency, d.win_probability, d.deal_health,
  d.lifecycle_stage, d.stage_id, s.name as stage_name, s.stage_type, d.pipeline_id, p.name as pipeline_name,
  d.owner_name, d.contact_name, d.contact_email, d.contact_phone, d.notes, d.lead_source,
  ${isoSql('d.expected_close_date')} as expected_close_date, ${isoSql('d.last_activity_at')} as last_activity_at,
  ${isoSql('d.created_at')} as created_at, ${isoSql('d.updated_at')} as updated_at`;
const DEAL_FROM = `deals d join pipeline_stages s on s.id = d.stage_id join pipelines p on p.id = d.pipeline_id`;

/** The columns of a deal as created: what the insert writes and what the create answers. */
export type NewDeal = Pick<
  Deal,
  | 'id'
  | 'orgId'
  | 'title'
  | 'companyName'
  | 'value'
  | 'currency'
  | 'winProbability'
  | 'dealHealth'
  | 'lifecycleStage'
  | 'ownerName'
  | 'contactName'
  | 'contactEmail'
  | 'contactPhone'
  | 'notes'
  | 'leadSource'
  | 'expectedCloseDate'
  | 'lastActivityAt'
  | 'createdAt'
  | 'updatedAt'
>;

type DealRow = Omit<DealDto, 'value'> & { value: string | number | null };

/** The one mapping from stored deal to API Deal. */
function toDealDto(row: DealRow): DealDto {
  return { ...row, value: numberOrNull(row.value) };
}

/**
 * The same row, from a deal just written in this unit of work and its stage: a create answers without
 * reading back what it wrote. Timestamps are the entity's own (millisecond) values, as stored.
 */
export function dealDtoOf(deal: NewDeal, stage: StageRow): DealDto {
  return toDealDto({
    id: deal.id,
    title: deal.title,
    company_name: deal.companyName ?? null,
    value: deal.value ?? null,
    currency: deal.currency ?? null,
    win_probability: deal.winProbability ?? null,
    deal_health: deal.dealHealth ?? null,
    lifecycle_stage: deal.lifecycleStage ?? null,
    stage_id: stage.id,
    stage_name: stage.name,
    stage_type: stage.stage_type,
    pipeline_id: stage.pipeline_id,
    pipeline_name: stage.pipeline_name,
    owner_name: deal.ownerName ?? null,
    contact_name: deal.contactName ?? null,
    contact_email: deal.contactEmail ?? null,
    contact_phone: deal.contactPhone ?? null,
    notes: deal.notes ?? null,
    lead_source: deal.leadSource ?? null,
    expected_close_date: toIso(deal.expectedCloseDate),
    last_activity_at: toIso(deal.lastActivityAt),
    created_at: deal.createdAt.toISOString(),
    updated_at: toIso(deal.updatedAt),
  });
}

/**
 * A page of deals, newest first, by `offset` or after a cursor (the last deal seen: read in the index's
 * order from there, however deep). The total comes from the counts the database keeps per organization,
 * pipeline and lifecycle stage: a few rows summed, whatever the organization's size.
 */
export async function queryDeals(em: EntityManager, query: DealListQuery) {
  const conditions = ['d.org_id = ?'];
  const counted = ['org_id = ?'];
  const params: unknown[] = [];
  if (query.lifecycle_stage) {
    conditions.push('d.lifecycle_stage = ?');
    counted.push('lifecycle_stage = ?');
    params.push(query.lifecycle_stage);
  }
  if (query.pipeline_id) {
    conditions.push('d.pipeline_id = ?');
    counted.push('pipeline_id = ?');
    params.push(query.pipeline_id);
  }
  const page = [...conditions];
  const pageParams = [...params];
  const cursor = await afterCursor(em, { table: 'deals', alias: 'd', what: 'deal' }, query);
  if (cursor) {
    page.push(cursor.condition);
    pageParams.push(...cursor.params);
  }
  // The kept total and the page in one statement (a round trip less): the total's row is there even when the
  // page is empty, the page's rows hang off it in their index order.
  const rows = await orgRows<DealRow & { list_total: string | number | null; list_at: unknown }>(
    em,
    `select t.total as list_total, page.* from
       (select coalesce(sum(n), 0) as total from deal_counts where ${counted.join(' and ')}) t
       left join lateral (
         select ${DEAL_COLUMNS}, d.created_at as list_at from ${DEAL_FROM} where ${page.join(' and ')}
          order by d.created_at desc, d.id desc limit ? offset ?
       ) page on true
     order by page.list_at desc, page.id desc`,
    [...params, currentOrg(em), ...pageParams, query.limit + 1, query.offset],
  );
  const total = Number(rows[0]?.list_total ?? 0);
  const found = rows[0]?.id == null ? [] : rows;
  const data = found.slice(0, query.limit).map(({ list_total: _, list_at: __, ...row }) => toDealDto(row));
  return {
    data,
    meta: {
      total,
      limit: query.limit,
      offset: query.offset,
      next_cursor: found.length > query.limit ? (data.at(-1)?.id ?? null) : null,
    },
  };
}

export async function queryDeal(em: EntityManager, id: string): Promise<DealDto | undefined> {
  const [row] = await orgRows<DealRow>(
    em,
    `select ${DEAL_COLUMNS} from ${DEAL_FROM} where d.org_id = ? and d.id = ?`,
    [id],
  );
  return row ? toDealDto(row) : undefined;
}

/**
 * The deal detail: the deal, its contacts as stakeholders (oldest first), its most recent activities, in one
 * statement. Three statements cost three round trips, and on loopback a round trip's socket writes were the
 * largest part of the call's CPU.
 */
export async function queryDealDetail(em: EntityManager, id: string, activityLimit: number) {
  const [row] = await orgRows<DealRow & { stakeholders: unknown; recent_activities: unknown }>(
    em,
    `select ${DEAL_COLUMNS},
       (select coalesce(json_agg(json_build_object('id', c.id, 'name', c.name, 'email', c.email, 'title', c.title,
                 'role_type', c.role_type, 'influence_level', c.influence_level,
                 'engagement_level', c.engagement_level, 'sentiment', c.sentiment) order by c.created_at, c.id), '[]'::json)
          from contacts c where c.org_id = d.org_id and c.deal_id = d.id) as stakeholders,
       (select coalesce(json_agg(json_build_object('id', a.id, 'type', a.type, 'description', a.description,
                 'created_at', ${isoSql('a.created_at')}) order by a.created_at desc, a.id desc), '[]'::json)
          from (select id, type, description, created_at from activities
                 where org_id = d.org_id and deal_id = d.id order by created_at desc, id desc
                 limit ${Math.trunc(activityLimit)}) a) as recent_activities
     from ${DEAL_FROM} where d.org_id = ? and d.id = ?`,
    [id],
  );
  if (!row) return undefined;
  const { stakeholders, recent_activities, ...deal } = row;
  return {
    deal: toDealDto(deal),
    stakeholders: asJson<StakeholderRow[]>(stakeholders),
    recent_activities: asJson<ActivityRow[]>(recent_activities),
  };
}

type StakeholderRow = z.infer<typeof Stakeholder>;
type ActivityRow = z.infer<typeof Activity>;
