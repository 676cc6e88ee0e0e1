import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { uuidv7 } from './ids.ts';

/**
 * Every row of tenant data carries `org_id`; this filter is the single place that scopes reads by it.
 * It is on by default and needs the `orgId` parameter, so a query that forgot the organization fails
 * loudly instead of reading across tenants. Nothing turns it off: what crosses organizations by nature
 * goes through one named door (`unscopedDb` in @crm/api's org-scope.ts).
 */
export const ORG_FILTER = 'org';
const orgFilter = {
  [ORG_FILTER]: {
    name: ORG_FILTER,
    cond: (args: { orgId: string }) => ({ orgId: args.orgId }),
    default: true,
  },
};

const id = () =>
  p
    .uuid()
    .primary()
    .onCreate(() => uuidv7());
const createdAt = () => p.datetime().onCreate(() => new Date());
const updatedAt = () =>
  p
    .datetime()
    .nullable()
    .onUpdate(() => new Date());

export const Organization = defineEntity({
  name: 'Organization',
  tableName: 'organizations',
  properties: {
    id: id(),
    name: p.string(),
    createdAt: createdAt(),
  },
});
export type Organization = InferEntity<typeof Organization>;

export const ApiKey = defineEntity({
  name: 'ApiKey',
  tableName: 'api_keys',
  properties: {
    id: id(),
    orgId: p.uuid(),
    name: p.string().nullable(),
    /** First characters of the key, kept so an admin can tell keys apart; never enough to use it. */
    prefix: p.string(),
    keyHash: p.string().unique(),
    /** Who made it: the person's e-mail (dashboard), "CLI", or "first start"; null for keys made before. */
    createdBy: p.string().nullable(),
    createdAt: createdAt(),
    lastUsedAt: p.datetime().nullable(),
    revokedAt: p.datetime().nullable(),
    /** What the key may call: scope names, or `*` for everything. */
    scopes: p.array().default(['*']),
    /** After this the key answers 401 `expired_api_key`; null: never. */
    expiresAt: p.datetime().nullable(),
    /** The key a rotation issued in its place. */
    replacedBy: p.uuid().nullable(),
  },
});
export type ApiKey = InferEntity<typeof ApiKey>;

export const Pipeline = defineEntity({
  name: 'Pipeline',
  tableName: 'pipelines',
  filters: orgFilter,
  properties: {
    id: id(),
    orgId: p.uuid(),
    name: p.string(),
    isDefault: p.boolean().default(false),
    createdAt: createdAt(),
  },
});
export type Pipeline = InferEntity<typeof Pipeline>;

export const STAGE_TYPES = ['open', 'won', 'lost'] as const;
export type StageType = (typeof STAGE_TYPES)[number];

export const PipelineStage = defineEntity({
  name: 'PipelineStage',
  tableName: 'pipeline_stages',
  filters: orgFilter,
  properties: {
    id: id(),
    orgId: p.uuid(),
    pipeline: () => p.manyToOne(Pipeline).ref(),
    name: p.string(),
    stageType: p.enum(STAGE_TYPES),
    position: p.integer(),
    color: p.string(),
    probability: p.integer().nullable(),
    /** Days without activity after which a deal in this stage is rotting; null: never. */
    rottenDays: p.integer().nullable(),
    createdAt: createdAt(),
  },
});
export type PipelineStage = InferEntity<typeof PipelineStage>;

/** A company deals and contacts can be linked to (docs/api/companies.md). */
export const Company = defineEntity({
  name: 'Company',
  tableName: 'companies',
  filters: orgFilter,
  properties: {
    id: id(),
    orgId: p.uuid(),
    name: p.text(),
    /** Lower case, without scheme, `www.` or path; unique in the organization. */
    domain: p.text().nullable(),
    industry: p.text().nullable(),
    size: p.text().nullable(),
    website: p.text().nullable(),
    custom: p.json<Record<string, unknown>>().default('{}'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
});
export type Company = InferEntity<typeof Company>;

export const Deal = defineEntity({
  name: 'Deal',
  tableName: 'deals',
  filters: orgFilter,
  properties: {
    id: id(),
    orgId: p.uuid(),
    title: p.text(),
    companyName: p.text().nullable(),
    /** The linked company (docs/api/companies.md); its name stands in for an unset `company_name`. */
    companyId: p.uuid().nullable(),
    /** True while `company_name` is the linked company's name, copied (and renamed with it), not the client's. */
    companyNameFollows: p.boolean().default(false),
    /** The deal's primary contact (a stakeholder link's `is_primary`): one column, so at most one. */
    primaryContactId: p.uuid().nullable(),
    value: p.decimal('number').nullable(),
    currency: p.string().nullable(),
    winProbability: p.integer().nullable(),
    dealHealth: p.string().nullable(),
    lifecycleStage: p.string().nullable(),
    /** True once a client set lifecycle_stage itself; from then on stage moves no longer change it. */
    lifecycleStageManual: p.boolean().default(false),
    pipeline: () => p.manyToOne(Pipeline).ref(),
    stage: () => p.manyToOne(PipelineStage).ref(),
    ownerName: p.text().nullable(),
    contactName: p.text().nullable(),
    contactEmail: p.text().nullable(),
    contactPhone: p.text().nullable(),
    notes: p.text().nullable(),
    description: p.text().nullable(),
    leadSource: p.text().nullable(),
    expectedCloseDate: p.datetime().nullable(),
    lastActivityAt: p.datetime().nullable(),
    /** The organization's own fields' values, by key (docs/api/custom-fields.md). */
    custom: p.json<Record<string, unknown>>().default('{}'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
});
export type Deal = InferEntity<typeof Deal>;

export const ROLE_TYPES = [
  'economic_buyer',
  'champion',
  'technical_buyer',
  'end_user',
  'influencer',
  'executive_sponsor',
  'blocker',
  'unknown',
] as const;
export const INFLUENCE_LEVELS = ['high', 'medium', 'low'] as const;
export const ENGAGEMENT_LEVELS = ['high', 'medium', 'low', 'unknown'] as const;
export const SENTIMENTS = ['positive', 'neutral', 'negative', 'unknown'] as const;

export const Contact = defineEntity({
  name: 'Contact',
  tableName: 'contacts',
  filters: orgFilter,
  properties: {
    id: id(),
    orgId: p.uuid(),
    deal: () => p.manyToOne(Deal).ref().deleteRule('cascade'),
    companyId: p.uuid().nullable(),
    name: p.text(),
    email: p.text().nullable(),
    title: p.text().nullable(),
    phone: p.text().nullable(),
    roleType: p.enum(ROLE_TYPES).default('unknown'),
    department: p.text().nullable(),
    influenceLevel: p.enum(INFLUENCE_LEVELS).nullable(),
    engagementLevel: p.enum(ENGAGEMENT_LEVELS).nullable(),
    sentiment: p.enum(SENTIMENTS).nullable(),
    linkedinUrl: p.text().nullable(),
    notes: p.text().nullable(),
    custom: p.json<Record<string, unknown>>().default('{}'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
});
export type Contact = InferEntity<typeof Contact>;

/**
 * A contact's link to a deal other than its own (`contacts.deal_id`), with its role on that deal
 * (docs/api/stakeholders.md).
 */
export const DealStakeholder = defineEntity({
  name: 'DealStakeholder',
  tableName: 'deal_stakeholders',
  filters: orgFilter,
  properties: {
    orgId: p.uuid(),
    deal: () => p.manyToOne(Deal).ref().primary().deleteRule('cascade'),
    contact: () => p.manyToOne(Contact).ref().primary().deleteRule('cascade'),
    roleType: p.enum(ROLE_TYPES).default('unknown'),
    influenceLevel: p.enum(INFLUENCE_LEVELS).nullable(),
    engagementLevel: p.enum(ENGAGEMENT_LEVELS).nullable(),
    sentiment: p.enum(SENTIMENTS).nullable(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
});
export type DealStakeholder = InferEntity<typeof DealStakeholder>;

/** That a person was erased, and what went with them: no personal data (migration `…erasures`). */
export const ErasureReceipt = defineEntity({
  name: 'ErasureReceipt',
  tableName: 'erasure_receipts',
  filters: orgFilter,
  properties: {
    id: id(),
    orgId: p.uuid(),
    contactId: p.uuid(),
    erasedAt: p.datetime(),
    actor: p.json<Record<string, unknown>>().nullable(),
    removed: p.json<Record<string, number>>(),
  },
});
export type ErasureReceipt = InferEntity<typeof ErasureReceipt>;

/** What changed in one mutation: field name to its previous and new value. */
export type FieldChanges = Record<string, { from: unknown; to: unknown }>;

export const Activity = defineEntity({
  name: 'Activity',
  tableName: 'activities',
  filters: orgFilter,
  properties: {
    id: id(),
    orgId: p.uuid(),
    deal: () => p.manyToOne(Deal).ref().deleteRule('cascade'),
    contactId: p.uuid().nullable(),
    type: p.string(),
    description: p.text().nullable(),
    changes: p.json<FieldChanges>().nullable(),
    createdAt: createdAt(),
  },
});
export type Activity = InferEntity<typeof Activity>;

export const ENGAGEMENT_TYPES = ['note', 'task', 'call', 'meeting', 'email'] as const;
export type EngagementType = (typeof ENGAGEMENT_TYPES)[number];
export const TASK_STATUSES = ['open', 'done'] as const;
export const LINK_TARGETS = ['deal', 'contact', 'company'] as const;
export type LinkTarget = (typeof LINK_TARGETS)[number];

/**
 * An activity a person logged (`/activities`: a note, task, call, meeting or e-mail), once, whatever it is
 * linked to; the system's own record of writes is `Activity` (see Migration20261201000200_activities).
 */
export const Engagement = defineEntity({
  name: 'Engagement',
  tableName: 'engagements',
  filters: orgFilter,
  properties: {
    id: id(),
    orgId: p.uuid(),
    type: p.enum(ENGAGEMENT_TYPES),
    subject: p.text(),
    body: p.text().nullable(),
    /** When it happened; a task's is its creation time. */
    occurredAt: p.datetime(),
    dueAt: p.datetime().nullable(),
    status: p.enum(TASK_STATUSES).nullable(),
    completedAt: p.datetime().nullable(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
});
export type Engagement = InferEntity<typeof Engagement>;

/** A logged activity's link to a deal, contact or company; `occurredAt` is the activity's, for the index. */
export const EngagementLink = defineEntity({
  name: 'EngagementLink',
  tableName: 'engagement_links',
  filters: orgFilter,
  properties: {
    engagementId: p.uuid().primary(),
    targetId: p.uuid().primary(),
    orgId: p.uuid(),
    targetType: p.enum(LINK_TARGETS),
    /** A contact who took part (a participant), not only one it concerns. */
    participant: p.boolean().default(false),
    occurredAt: p.datetime(),
  },
});
export type EngagementLink = InferEntity<typeof EngagementLink>;

/** Stored first responses for `Idempotency-Key` retries, scoped to the API key that sent them. */
export const IdempotencyRecord = defineEntity({
  name: 'IdempotencyRecord',
  tableName: 'idempotency_keys',
  properties: {
    id: id(),
    apiKeyId: p.uuid(),
    key: p.string(),
    operation: p.string(),
    requestHash: p.string(),
    responseStatus: p.integer().nullable(),
    responseBody: p.json<unknown>().nullable(),
    createdAt: createdAt(),
  },
});
export type IdempotencyRecord = InferEntity<typeof IdempotencyRecord>;

/**
 * The event kinds a webhook endpoint can subscribe to: the contract's eight (section 6), exactly, then those of
 * the resources the contract does not have (companies, stakeholder links, activities).
 */
export const WEBHOOK_EVENT_TYPES = [
  'deal.created',
  'deal.updated',
  'deal.stage_changed',
  'deal.won',
  'deal.lost',
  'contact.created',
  'contact.updated',
  'analysis.completed',
  'company.created',
  'company.updated',
  'deal.stakeholder_added',
  'deal.stakeholder_removed',
  'activity.created',
  'activity.updated',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];
/** Sent to one endpoint on request (the dashboard's "Send test event"); nobody subscribes to it. */
export const TEST_EVENT_TYPE = 'webhook.test';
const OUTBOX_EVENT_TYPES = [...WEBHOOK_EVENT_TYPES, TEST_EVENT_TYPE] as const;

/**
 * The transactional outbox: a domain event, written in the same transaction as the change that caused
 * it, so a rolled-back change emits nothing and a committed one is never lost. `payload` is the exact
 * body every subscribed endpoint receives (Standard Webhooks `{ type, timestamp, data }`), serialized
 * once so that every attempt sends, and signs, the same bytes. The webhook worker fans it out to
 * `webhook_deliveries` and sets `dispatched_at`.
 */
export const OutboxEvent = defineEntity({
  name: 'OutboxEvent',
  tableName: 'outbox_events',
  filters: orgFilter,
  properties: {
    id: id(),
    orgId: p.uuid(),
    type: p.enum(OUTBOX_EVENT_TYPES),
    payload: p.text(),
    createdAt: createdAt(),
    dispatchedAt: p.datetime().nullable(),
    /** Its place in the organization's event feed, given once it is committed (see the migration). */
    position: p.bigint('number').nullable(),
    /** Who made the change: `{ type: 'api_key', api_key_id, via }` or `{ type: 'user', user_id, via }`. */
    actor: p.json<Record<string, unknown>>().nullable(),
    requestId: p.text().nullable(),
  },
});
export type OutboxEvent = InferEntity<typeof OutboxEvent>;

/** The monthly quotas an organization is held to (contract section 8): API calls, and AI calls. */
export const QUOTAS = ['api_calls', 'ai_calls'] as const;
export type Quota = (typeof QUOTAS)[number];

/** An organization's own monthly quotas, set by `crm org set-quota`; null keeps the configured default. */
export const OrganizationQuota = defineEntity({
  name: 'OrganizationQuota',
  tableName: 'organization_quotas',
  properties: {
    orgId: p.uuid().primary(),
    apiCallsPerMonth: p.bigint('number').nullable(),
    aiCallsPerMonth: p.bigint('number').nullable(),
    updatedAt: p.datetime(),
  },
});
export type OrganizationQuota = InferEntity<typeof OrganizationQuota>;

/**
 * Calls counted per organization, UTC month (`YYYY-MM`) and quota. Instances add what they counted
 * every second or so (upsert-add), so no request ever writes this row.
 */
export const UsageCounter = defineEntity({
  name: 'UsageCounter',
  tableName: 'usage_counters',
  properties: {
    orgId: p.uuid().primary(),
    period: p.string().primary(),
    quota: p.enum(QUOTAS).primary(),
    used: p.bigint('number'),
    updatedAt: p.datetime(),
  },
});
export type UsageCounter = InferEntity<typeof UsageCounter>;

/** An organization crossed 80 % or 95 % of a quota in a period: recorded once (unique), shown by GET /usage. */
export const UsageAlert = defineEntity({
  name: 'UsageAlert',
  tableName: 'usage_alerts',
  filters: orgFilter,
  properties: {
    id: id(),
    orgId: p.uuid(),
    period: p.string(),
    quota: p.enum(QUOTAS),
    thresholdPercent: p.integer(),
    used: p.bigint('number'),
    quotaLimit: p.bigint('number'),
    createdAt: createdAt(),
  },
});
export type UsageAlert = InferEntity<typeof UsageAlert>;

/** A subscriber: where to send which event kinds, signed with its own secret. */
export const WebhookEndpoint = defineEntity({
  name: 'WebhookEndpoint',
  tableName: 'webhook_endpoints',
  filters: orgFilter,
  properties: {
    id: id(),
    orgId: p.uuid(),
    url: p.text(),
    events: p.enum(WEBHOOK_EVENT_TYPES).array(),
    /** The signing secret, sealed (AES-256-GCM) when an encryption key is configured: see `@crm/webhooks`. */
    secret: p.text(),
    isActive: p.boolean().default(true),
    /** Consecutive failed attempts; reset by a success. */
    failureCount: p.integer().default(0),
    lastTriggeredAt: p.datetime().nullable(),
    /** The filter as the client sent it (docs/api/webhooks.md#filters); null: every event of its kinds. */
    filter: p.json<Record<string, unknown>>().nullable(),
    /** The filter checked against each subscribed kind's record, by kind: what the worker evaluates. */
    filterPlan: p.json<Record<string, unknown>>().nullable(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
});
export type WebhookEndpoint = InferEntity<typeof WebhookEndpoint>;

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed', 'cancelled'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/**
 * One event on its way to one endpoint: retried until it succeeds, runs out of retries (`failed`) or its
 * endpoint is deactivated (`cancelled`). A worker claims it with a lease (`locked_until`, `locked_by`),
 * so a killed worker's claim expires instead of being lost.
 */
export const WebhookDelivery = defineEntity({
  name: 'WebhookDelivery',
  tableName: 'webhook_deliveries',
  filters: orgFilter,
  properties: {
    id: id(),
    orgId: p.uuid(),
    endpointId: p.uuid(),
    eventId: p.uuid(),
    status: p.enum(DELIVERY_STATUSES),
    attemptCount: p.integer().default(0),
    nextAttemptAt: p.datetime().nullable(),
    lockedUntil: p.datetime().nullable(),
    lockedBy: p.uuid().nullable(),
    createdAt: createdAt(),
    updatedAt: p.datetime(),
  },
});
export type WebhookDelivery = InferEntity<typeof WebhookDelivery>;

/** What one HTTP attempt of a delivery gave: kept for the retention period, then pruned. */
export const WebhookAttempt = defineEntity({
  name: 'WebhookAttempt',
  tableName: 'webhook_attempts',
  filters: orgFilter,
  properties: {
    id: id(),
    orgId: p.uuid(),
    deliveryId: p.uuid(),
    attempt: p.integer(),
    createdAt: createdAt(),
    durationMs: p.integer(),
    responseStatus: p.integer().nullable(),
    /** Why it failed when no response said so (timeout, refused address, connection error). */
    error: p.text().nullable(),
    /** The start of the response body, capped. */
    responseBody: p.text().nullable(),
    succeeded: p.boolean(),
  },
});
export type WebhookAttempt = InferEntity<typeof WebhookAttempt>;

/** A deal analysis as POST /deals/{id}/analyze answered it (`result`), newest last. */
export const DealAnalysis = defineEntity({
  name: 'DealAnalysis',
  tableName: 'deal_analyses',
  filters: orgFilter,
  properties: {
    id: id(),
    orgId: p.uuid(),
    deal: () => p.manyToOne(Deal).ref().deleteRule('cascade'),
    totalScore: p.decimal('number').nullable(),
    scoreBand: p.string().nullable(),
    dealHealth: p.string().nullable(),
    winProbability: p.integer().nullable(),
    narrativeSource: p.string(),
    result: p.json<Record<string, unknown>>(),
    createdAt: createdAt(),
  },
});
export type DealAnalysis = InferEntity<typeof DealAnalysis>;

export const USER_ROLES = ['admin', 'member'] as const;
export type UserRole = (typeof USER_ROLES)[number];

/**
 * A person who signs in to the dashboard, in one organization. The table is better-auth's user table
 * (see `@crm/api` admin/auth) with `org_id` and `role` added; sessions, accounts (the password hash) and
 * verifications are better-auth's own and not mapped here.
 */
export const User = defineEntity({
  name: 'User',
  tableName: 'users',
  properties: {
    id: id(),
    orgId: p.uuid(),
    role: p.enum(USER_ROLES),
    name: p.text(),
    email: p.text().unique(),
    emailVerified: p.boolean().default(false),
    image: p.text().nullable(),
    createdAt: createdAt(),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type User = InferEntity<typeof User>;

/** A link that lets someone join an organization once, until it expires. Only the token's hash is kept. */
export const Invitation = defineEntity({
  name: 'Invitation',
  tableName: 'invitations',
  properties: {
    id: id(),
    orgId: p.uuid(),
    tokenHash: p.string().unique(),
    role: p.enum(USER_ROLES),
    email: p.text().nullable(),
    invitedBy: p.text().nullable(),
    createdAt: createdAt(),
    expiresAt: p.datetime(),
    acceptedAt: p.datetime().nullable(),
  },
});
export type Invitation = InferEntity<typeof Invitation>;

/** Who did what to the organization's keys, webhooks and people, and when. Append only. */
export const AuditEntry = defineEntity({
  name: 'AuditEntry',
  tableName: 'audit_log',
  properties: {
    id: id(),
    orgId: p.uuid(),
    at: p.datetime(),
    actor: p.text(),
    action: p.string(),
    target: p.text().nullable(),
    details: p.text().nullable(),
  },
});
export type AuditEntry = InferEntity<typeof AuditEntry>;

/** Calls counted per organization, UTC day and quota, added to by the same flush as the month's counters. */
export const UsageDay = defineEntity({
  name: 'UsageDay',
  tableName: 'usage_daily',
  properties: {
    orgId: p.uuid().primary(),
    day: p.string().primary(),
    quota: p.enum(QUOTAS).primary(),
    used: p.bigint('number'),
  },
});
export type UsageDay = InferEntity<typeof UsageDay>;

/** Secrets the server made for itself once (the session-cookie key), shared by every instance. */
export const ServerSecret = defineEntity({
  name: 'ServerSecret',
  tableName: 'server_secrets',
  properties: {
    name: p.string().primary(),
    value: p.text(),
    createdAt: createdAt(),
  },
});
export type ServerSecret = InferEntity<typeof ServerSecret>;

/** One of an organization's own fields on deals, contacts or companies (docs/api/custom-fields.md). */
export const CustomField = defineEntity({
  name: 'CustomField',
  tableName: 'custom_fields',
  filters: orgFilter,
  properties: {
    orgId: p.uuid().primary(),
    object: p.text().primary(),
    key: p.text().primary(),
    label: p.text(),
    type: p.text(),
    required: p.boolean().default(false),
    isUnique: p.boolean().default(false),
    isIndexed: p.boolean().default(false),
    defaultValue: p.json<unknown>().nullable(),
    options: p.json<Array<{ value: string; label: string; archived: boolean }>>().default('[]'),
    validation: p.json<Record<string, unknown>>().default('{}'),
    description: p.text().nullable(),
    aiHint: p.text().nullable(),
    position: p.integer(),
    archivedAt: p.datetime().nullable(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
});
export type CustomField = InferEntity<typeof CustomField>;

/**
 * A saved view (docs/api/query.md, Saved views): a named filter and sort of one listed object, which
 * `GET /{object}?view=<id>` applies. The filter is kept as the client sent it and checked against the
 * object's fields again each time it is applied (custom fields change).
 */
export const SavedView = defineEntity({
  name: 'SavedView',
  tableName: 'saved_views',
  filters: orgFilter,
  properties: {
    id: id(),
    orgId: p.uuid(),
    /** Unique per organization and object, case aside. */
    name: p.text(),
    /** The list it filters: deals, contacts, companies or activities. */
    object: p.text(),
    filter: p.json<Record<string, unknown>>().nullable(),
    sort: p.text().nullable(),
    description: p.text().nullable(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
});
export type SavedView = InferEntity<typeof SavedView>;

export const entities = [
  Organization,
  ApiKey,
  Pipeline,
  PipelineStage,
  Company,
  Deal,
  Contact,
  DealStakeholder,
  ErasureReceipt,
  Activity,
  Engagement,
  EngagementLink,
  IdempotencyRecord,
  OutboxEvent,
  OrganizationQuota,
  UsageCounter,
  UsageAlert,
  WebhookEndpoint,
  WebhookDelivery,
  WebhookAttempt,
  DealAnalysis,
  User,
  Invitation,
  AuditEntry,
  UsageDay,
  ServerSecret,
  CustomField,
  SavedView,
];
