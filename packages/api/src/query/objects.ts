import { LINK_TARGETS, STAGE_TYPES, type WebhookEventType } from '@crm/db';
import { sql } from 'kysely';
import { z } from 'zod';
import { activityColumns } from '../features/activities/activities.service.ts';
import { LoggedActivity } from '../features/activities/activity.schemas.ts';
import { companyRows } from '../features/companies/company.queries.ts';
import { Company } from '../features/companies/company.schemas.ts';
import { contactRows } from '../features/contacts/contact.queries.ts';
import { Contact } from '../features/contacts/contact.schemas.ts';
import { dealRows } from '../features/deals/deal.queries.ts';
import { Deal } from '../features/deals/deal.schemas.ts';
import { Uuid } from '../schemas.ts';
import type { QueryObject } from './fields.ts';
import type { ListedObject } from './list.ts';

/**
 * The objects the filter and sort language lists, each declared once: its FROM (with the joins its output
 * reads), its output schema (every field of which a filter can name, typed from the schema), what the
 * schema does not say (a joined column, a closed set of values, the index that serves a field), and the
 * records one hop away. Companies and activities join with a declaration of their own.
 */
export const DEALS: ListedObject = {
  name: 'deals',
  what: 'deal',
  alias: 'd',
  from: (db) =>
    db
      .selectFrom('deals as d')
      .leftJoin('pipeline_stages as s', 's.id', 'd.stage_id')
      .leftJoin('pipelines as p', 'p.id', 'd.pipeline_id'),
  table: (db) => db.selectFrom('deals as d'),
  rows: (db) => dealRows(db, true),
  output: Deal,
  keptBy: ['stage_id', 'pipeline_id', 'lifecycle_stage'],
  fields: {
    stage_name: { column: 's.name' },
    stage_type: { column: 's.stage_type', type: 'enum', values: STAGE_TYPES },
    pipeline_name: { column: 'p.name' },
    created_at: { index: 'deals_org_recent (org_id, created_at desc, id desc)' },
    lifecycle_stage: { index: 'deals_org_lifecycle (org_id, lifecycle_stage, created_at desc)' },
    pipeline_id: { index: 'deals_org_pipeline (org_id, pipeline_id, created_at desc)' },
    stage_id: { index: 'deals_org_stage_* (org_id, stage_id, …)' },
    company_id: { index: 'deals_company (org_id, company_id, created_at desc)' },
    value: { index: 'deals_org_value (org_id, value desc nulls last, id desc)' },
    owner_name: { index: 'deals_org_owner (org_id, owner_name, created_at desc, id desc)' },
    updated_at: { index: 'deals_org_updated (org_id, updated_at desc nulls last, id desc)' },
    title: { index: 'deals_title_trgm (contains), deals_title_prefix (starts_with)' },
    company_name: { index: 'deals_company_trgm (contains), deals_company_prefix (starts_with)' },
  },
  custom: 'deals',
  relations: {
    stakeholders: { object: () => STAKEHOLDERS, link: sql`c.deal_id = d.id`, scope: 'contacts:read' },
    company: { object: () => COMPANIES, link: sql`co.id = d.company_id`, scope: 'companies:read' },
  },
};

export const CONTACTS: ListedObject = {
  name: 'contacts',
  what: 'contact',
  alias: 'c',
  from: (db) => db.selectFrom('contacts as c'),
  rows: contactRows,
  output: Contact,
  fields: {
    created_at: { index: 'contacts_org_recent (org_id, created_at desc, id desc)' },
    deal_id: { index: 'contacts_deal_id_index (deal_id)' },
    company_id: { index: 'contacts_company (org_id, company_id, created_at desc)' },
    name: { index: 'contacts_name_trgm (contains), contacts_name_prefix (starts_with)' },
    email: { index: 'contacts_email_trgm (contains)' },
    title: { index: 'contacts_title_trgm (contains)' },
  },
  custom: 'contacts',
  relations: {
    deal: { object: () => DEALS, link: sql`d.id = c.deal_id`, scope: 'deals:read' },
    company: { object: () => COMPANIES, link: sql`co.id = c.company_id`, scope: 'companies:read' },
  },
};

/** Companies: their own list, and the record deals and contacts filter by (`company.industry`). */
export const COMPANIES: ListedObject = {
  name: 'companies',
  what: 'company',
  alias: 'co',
  from: (db) => db.selectFrom('companies as co'),
  rows: (db) => companyRows(db, true),
  output: Company,
  fields: {
    created_at: { index: 'companies_org_created (org_id, created_at desc, id desc)' },
    name: { index: 'companies_name_trgm (contains), companies_name_prefix (starts_with)' },
    domain: { index: 'companies_domain (equal), companies_domain_trgm (contains)' },
  },
  custom: 'companies',
};

/** A contact's columns as its output names them (`contactRows`' own). */
const CONTACT_COLUMNS = Object.keys(Contact.shape);
/** What a link to another deal holds for itself: the deal, and the contact's role on it. */
const LINK_COLUMNS = new Set(['deal_id', 'role_type', 'influence_level', 'engagement_level', 'sentiment']);

/**
 * A deal's stakeholders, as the deal detail and the AI read them (stakeholders.service.ts, `stakeholdersOf`):
 * its own contacts with their fields, and the contacts linked to it (`deal_stakeholders`) with the link's
 * role, influence, engagement and sentiment. As `c`, one row per contact and deal: `stakeholders.<field>`
 * on deals is "a contact on this deal, in its role here, meets it".
 */
export const STAKEHOLDERS: QueryObject = {
  name: 'stakeholders',
  alias: 'c',
  from: (db) => {
    const own = db.selectFrom('contacts as c0').select(CONTACT_COLUMNS.map((k) => `c0.${k}` as 'c0.id'));
    const linked = db
      .selectFrom('deal_stakeholders as ds')
      .innerJoin('contacts as c1', 'c1.id', 'ds.contact_id')
      .select(CONTACT_COLUMNS.map((k) => (LINK_COLUMNS.has(k) ? `ds.${k}` : `c1.${k}`) as 'c1.id'));
    return db.selectFrom(own.unionAll(linked as never).as('c'));
  },
  output: Contact,
  custom: 'contacts',
};

/** An activity's links (`engagement_links`), as its output shows them: `{type, id}`. */
const LINKS: QueryObject = {
  name: 'links',
  alias: 'l',
  from: (db) => db.selectFrom('engagement_links as l'),
  output: z.object({ type: z.enum(LINK_TARGETS), id: Uuid }),
  fields: { type: { column: 'l.target_type' }, id: { column: 'l.target_id' } },
};

/**
 * Logged activities (`engagements`): their output's fields, and `links.type`/`links.id` (the activity is
 * linked to a record meeting it). Newest first by `occurred_at`, as the list always was; no count of
 * all matches (`meta` has no total: counting at 1M costs more than the page).
 */
export const ACTIVITIES: ListedObject = {
  name: 'activities',
  what: 'activity',
  alias: 'e',
  from: (db) => db.selectFrom('engagements as e'),
  rows: (db) => db.selectFrom('engagements as e').select((eb) => activityColumns(eb)),
  output: LoggedActivity,
  hidden: ['participants', 'links'],
  defaultSort: '-occurred_at',
  fields: {
    occurred_at: { index: 'engagements_org_recent (org_id, occurred_at desc, id desc)' },
    type: { index: 'engagements_org_type_recent (org_id, type, occurred_at desc, id desc)' },
  },
  relations: {
    links: {
      object: () => LINKS,
      link: sql`l.engagement_id = e.id`,
      scope: 'activities:read',
      carried: true,
    },
  },
};

/**
 * The object whose record an event's `data` is (the object's output, as the REST API answered): what a
 * webhook's or the feed's filter reads. Kinds not here carry no record (an analysis, a stakeholder link).
 */
export const EVENT_RECORDS: Partial<Record<WebhookEventType, ListedObject>> = {
  'deal.created': DEALS,
  'deal.updated': DEALS,
  'deal.stage_changed': DEALS,
  'deal.won': DEALS,
  'deal.lost': DEALS,
  'contact.created': CONTACTS,
  'contact.updated': CONTACTS,
  'company.created': COMPANIES,
  'company.updated': COMPANIES,
  'activity.created': ACTIVITIES,
  'activity.updated': ACTIVITIES,
};

/** The lists the language filters, by the name of their path (`GET /deals`): what a saved view is of. */
export const LISTED_OBJECTS = ['deals', 'contacts', 'companies', 'activities'] as const;
export type ListedObjectName = (typeof LISTED_OBJECTS)[number];
export const LISTS: Record<ListedObjectName, ListedObject> = {
  deals: DEALS,
  contacts: CONTACTS,
  companies: COMPANIES,
  activities: ACTIVITIES,
};
