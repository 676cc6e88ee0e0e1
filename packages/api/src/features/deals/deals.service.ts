import {
  Deal,
  type EntityManager,
  type FieldChanges,
  Pipeline,
  PipelineStage,
  type Tables,
  transaction,
  uuidv7,
} from '@crm/db';
import type { Insertable } from 'kysely';
import { activityRow, changeValue, recordActivity, sameValue } from '../../activities.ts';
import type { AuthedContext } from '../../context.ts';
import { notFound } from '../../errors.ts';
import { outboxRow } from '../../events.ts';
import { prepareQuery } from '../../prepared-query.ts';
import { linkedCompany } from '../companies/companies.service.ts';
import { fieldRules } from '../custom-fields/custom-fields.service.ts';
import { customChanges, customValuesOf } from '../custom-fields/custom-values.ts';
import {
  lifecycleForStage,
  pipelineStages,
  resolveStage,
  type StageRow,
} from '../pipeline/stages.service.ts';
import { emitDealUpdateEvents } from './deal.events.ts';
import { dealDtoOf, queryDeal, queryDealDetail } from './deal.queries.ts';
import type { DealCreateInput, DealDto, DealUpdateInput } from './deal.schemas.ts';

/** How many activities the deal detail shows. */
export const RECENT_ACTIVITY_LIMIT = 20;

export async function findDeal(em: EntityManager, id: string): Promise<Deal> {
  const deal = await em.findOne(Deal, { id });
  if (!deal) throw notFound('Deal');
  return deal;
}

export async function getDealDetail(em: EntityManager, id: string) {
  const detail = await queryDealDetail(em, id, RECENT_ACTIVITY_LIMIT);
  if (!detail) throw notFound('Deal');
  return detail;
}

/** Reads a deal back as the API shows it, in the caller's unit of work (so within its transaction). */
export async function dealDto(em: EntityManager, id: string): Promise<DealDto> {
  const dto = await queryDeal(em, id);
  if (!dto) throw notFound('Deal');
  return dto;
}

/** What a deal's creation writes (the deal, its 'deal_created' activity, its deal.created event) and answers. */
export interface CreatedDealRows {
  dto: DealDto;
  deal: Insertable<Tables['deals']>;
  activity: ReturnType<typeof activityRow>;
  event: ReturnType<typeof outboxRow>;
}

/**
 * The rows a create writes, built once for every door that creates deals (the API one at a time, the
 * import in chunks): the activity and event rows by `activityRow` and `outboxRow`, the same code
 * `recordActivity` and `emitEvent` insert with. `createdAt` is now, or an imported deal's own past date.
 */
export function createdDealRows(
  orgId: string,
  input: DealCreateInput,
  placed: { stage: StageRow; stages: readonly StageRow[] },
  custom: Record<string, unknown>,
  createdAt: Date,
  now: Date = createdAt,
  company?: { id: string; name: string },
): CreatedDealRows {
  const { stage, stages } = placed;
  // Linked without a name of its own, the deal shows its company's (and follows it: companies.service).
  const follows = company !== undefined && input.company_name === undefined;
  const deal = {
    id: uuidv7(),
    org_id: orgId,
    title: input.title,
    company_name: follows ? company.name : (input.company_name ?? null),
    company_id: company?.id ?? null,
    company_name_follows: follows,
    value: input.value ?? null,
    currency: input.currency ?? 'USD',
    lifecycle_stage: lifecycleForStage(stage, stages),
    lifecycle_stage_manual: false,
    pipeline_id: stage.pipeline_id,
    stage_id: stage.id,
    contact_name: input.contact_name ?? null,
    contact_email: input.contact_email ?? null,
    notes: input.notes ?? null,
    lead_source: input.lead_source ?? null,
    expected_close_date: input.expected_close_date ? new Date(input.expected_close_date) : null,
    last_activity_at: createdAt,
    created_at: createdAt,
    custom,
  } satisfies Insertable<Tables['deals']>;
  const dto = dealDtoOf(deal, stage);
  return {
    dto,
    deal,
    activity: activityRow(
      { id: deal.id, orgId },
      { type: 'deal_created', description: `Deal "${deal.title}" created in stage ${stage.name}` },
      createdAt,
    ),
    event: outboxRow(orgId, { type: 'deal.created', data: dto }, now),
  };
}

/**
 * The deal, its activity and its event in one statement (the deal insert and the event as data-modifying
 * CTEs): atomic without BEGIN/COMMIT, one round trip instead of five on the hot path.
 */
export async function createDeal(
  ctx: AuthedContext,
  em: EntityManager,
  input: DealCreateInput,
): Promise<DealDto> {
  const [placed, rules, company] = await Promise.all([
    resolveStage(em, { pipelineId: input.pipeline_id, stageId: input.stage_id }),
    fieldRules(em, 'deals'),
    input.company_id ? linkedCompany(em, input.company_id) : undefined,
  ]);
  const custom = customValuesOf(rules, 'deals', input.custom);
  const now = new Date();
  const { dto, ...rows } = createdDealRows(ctx.principal.orgId, input, placed, custom, now, now, company);
  await insertCreatedDeal(em, rows);
  return dto;
}

/** The create's one statement, compiled once (its rows name their organization themselves). */
const insertCreatedDeal = prepareQuery('insertCreatedDeal', (db, rows: Omit<CreatedDealRows, 'dto'>) =>
  db
    .with('deal', (q) => q.insertInto('deals').values(rows.deal))
    .with('event', (q) => q.insertInto('outbox_events').values(rows.event))
    .insertInto('activities')
    .values(rows.activity),
);

/** Input field -> entity property, for the fields a PATCH copies as they are. */
const PLAIN_FIELDS = {
  title: 'title',
  company_name: 'companyName',
  value: 'value',
  currency: 'currency',
  contact_name: 'contactName',
  contact_email: 'contactEmail',
  contact_phone: 'contactPhone',
  notes: 'notes',
  lead_source: 'leadSource',
  expected_close_date: 'expectedCloseDate',
  description: 'description',
} as const satisfies Partial<Record<keyof DealUpdateInput, keyof Deal>>;

export interface DealUpdateResult {
  deal: Deal;
  changes: FieldChanges;
  stageChange?: { from: StageRow; to: StageRow };
}

/**
 * A PATCH of a deal, in one transaction: the fields changed, their activities, and the events (as a
 * create's are emitted in createDeal). Returns the deal as it now is.
 */
export function updateDeal(em: EntityManager, id: string, input: DealUpdateInput): Promise<DealDto> {
  return transaction(em, async (tx) => {
    const update = await applyDealChanges(tx, id, input);
    const deal = await dealDto(tx, id);
    await emitDealUpdateEvents(tx, deal, update);
    return deal;
  });
}

async function applyDealChanges(
  em: EntityManager,
  id: string,
  input: DealUpdateInput,
): Promise<DealUpdateResult> {
  const deal = await findDeal(em, id);
  const changes: FieldChanges = {};
  const entity = deal as unknown as Record<string, unknown>;

  for (const [field, prop] of Object.entries(PLAIN_FIELDS)) {
    const raw = input[field as keyof typeof PLAIN_FIELDS];
    if (raw === undefined) continue;
    const next = field === 'expected_close_date' && raw !== null ? new Date(raw as string) : raw;
    if (sameValue(entity[prop], next)) continue;
    changes[field] = { from: changeValue(entity[prop]), to: changeValue(next) };
    entity[prop] = next;
  }
  await applyCompanyLink(em, deal, input, changes);
  if (input.custom !== undefined) {
    const current = deal.custom ?? {};
    const next = customValuesOf(await fieldRules(em, 'deals'), 'deals', input.custom, current);
    Object.assign(changes, customChanges(current, next));
    deal.custom = next;
  }

  let stageChange: DealUpdateResult['stageChange'];
  let stagesInPlay: readonly StageRow[] | undefined;
  if (input.stage_id !== undefined || input.pipeline_id !== undefined) {
    const resolved = await resolveStage(
      em,
      { pipelineId: input.pipeline_id, stageId: input.stage_id },
      deal.pipeline.id,
    );
    stagesInPlay = resolved.stages;
    const to = resolved.stage;
    // Naming the deal's own pipeline again, without a stage, keeps the stage it is in.
    const keep = input.stage_id === undefined && to.pipeline_id === deal.pipeline.id;
    if (!keep && to.id !== deal.stage.id) {
      const from =
        stagesInPlay.find((s) => s.id === deal.stage.id) ??
        (await pipelineStages(em, deal.pipeline.id)).find((s) => s.id === deal.stage.id);
      if (!from) throw new Error(`deal ${deal.id} sits in an unknown stage`);
      stageChange = { from, to };
      changes.stage_id = { from: from.id, to: to.id };
      if (to.pipeline_id !== deal.pipeline.id)
        changes.pipeline_id = { from: deal.pipeline.id, to: to.pipeline_id };
      deal.stage = em.getReference(PipelineStage, to.id, { wrapped: true });
      deal.pipeline = em.getReference(Pipeline, to.pipeline_id, { wrapped: true });
    }
  }

  if (input.lifecycle_stage !== undefined) deal.lifecycleStageManual = input.lifecycle_stage !== null;
  let lifecycle = deal.lifecycleStage ?? null;
  if (input.lifecycle_stage != null) lifecycle = input.lifecycle_stage;
  else if (!deal.lifecycleStageManual && (stageChange || input.lifecycle_stage === null)) {
    stagesInPlay ??= await pipelineStages(em, deal.pipeline.id);
    const current = stagesInPlay.find((s) => s.id === deal.stage.id);
    if (!current) throw new Error(`deal ${deal.id} sits in a stage outside its pipeline`);
    lifecycle = lifecycleForStage(current, stagesInPlay);
  }
  if (!sameValue(deal.lifecycleStage, lifecycle)) {
    changes.lifecycle_stage = { from: deal.lifecycleStage ?? null, to: lifecycle };
    deal.lifecycleStage = lifecycle;
  }

  // A lifecycle change that only follows the stage move belongs to the stage_changed entry.
  const lifecycleFollowsStage = Boolean(stageChange) && input.lifecycle_stage === undefined;
  if (stageChange) {
    await recordActivity(em, deal, {
      type: 'stage_changed',
      description: `Stage changed from ${stageChange.from.name} to ${stageChange.to.name}`,
      changes: {
        stage: { from: stageChange.from.name, to: stageChange.to.name },
        ...(lifecycleFollowsStage && changes.lifecycle_stage
          ? { lifecycle_stage: changes.lifecycle_stage }
          : {}),
      },
    });
  }
  const fieldNames = Object.keys(changes).filter(
    (f) => f !== 'stage_id' && f !== 'pipeline_id' && !(f === 'lifecycle_stage' && lifecycleFollowsStage),
  );
  if (fieldNames.length > 0) {
    await recordActivity(em, deal, {
      type: 'deal_updated',
      description: `Updated ${fieldNames.join(', ')}`,
      changes: Object.fromEntries(fieldNames.map((f) => [f, changes[f] as FieldChanges[string]])),
    });
  }
  await em.flush();
  return { deal, changes, ...(stageChange ? { stageChange } : {}) };
}

/**
 * A PATCH's `company_id` and `company_name`, after the plain fields were copied: a deal linked to a
 * company whose `company_name` is unset (or was its previous company's) shows the company's name and
 * follows it; a name of the client's own stays the deal's. Unlinking keeps the name, as the deal's own.
 */
async function applyCompanyLink(
  em: EntityManager,
  deal: Deal,
  input: DealUpdateInput,
  changes: FieldChanges,
): Promise<void> {
  if (input.company_name != null) deal.companyNameFollows = false;
  let company: { id: string; name: string } | undefined;
  if (input.company_id !== undefined && input.company_id !== (deal.companyId ?? null)) {
    if (input.company_id !== null) company = await linkedCompany(em, input.company_id);
    changes.company_id = { from: deal.companyId ?? null, to: input.company_id };
    deal.companyId = input.company_id;
    if (input.company_id === null) deal.companyNameFollows = false;
  }
  const takesName =
    deal.companyId != null &&
    input.company_name == null &&
    (deal.companyName == null || (deal.companyNameFollows && changes.company_id !== undefined));
  if (!takesName) return;
  company ??= await linkedCompany(em, deal.companyId as string);
  const from = changes.company_name ? changes.company_name.from : (deal.companyName ?? null);
  deal.companyName = company.name;
  deal.companyNameFollows = true;
  if (sameValue(from, company.name)) delete changes.company_name;
  else changes.company_name = { from, to: company.name };
}

export async function deleteDeal(em: EntityManager, id: string): Promise<void> {
  // The org filter scopes the delete too; contacts and activities go with it (ON DELETE CASCADE).
  const deleted = await em.nativeDelete(Deal, { id });
  if (deleted === 0) throw notFound('Deal');
}
