import { USER_ROLES, WEBHOOK_EVENT_TYPES } from '@crm/db';
import { z } from 'zod';
import { runAsCall } from '../call-context.ts';
import { type Context, headerValue } from '../context.ts';
import { ApiError, MAX_BODY_BYTES, notFound } from '../errors.ts';
import {
  AI_HINTS,
  CUSTOM_OBJECTS,
  CustomFieldCreateInput,
  FIELD_TYPES,
  FieldPath,
  ObjectPath,
} from '../features/custom-fields/custom-field.schemas.ts';
import {
  archiveCustomField,
  createCustomField,
  getCustomField,
  listCustomFields,
  schemaChange,
  updateCustomField,
} from '../features/custom-fields/custom-fields.service.ts';
import {
  INDEXED_TYPES,
  RANGED_TYPES,
  SELECT_TYPES,
  TEXT_TYPES,
  UNIQUE_TYPES,
} from '../features/custom-fields/custom-values.ts';
import {
  applySchema,
  exportSchema,
  parseSchemaFile,
  planSchema,
  type SchemaStep,
} from '../features/custom-fields/schema-file.ts';
import { quotaNotices, usageOf } from '../features/usage/usage.service.ts';
import { WebhookCreateInput, WebhookDeliveryListQuery } from '../features/webhooks/webhook.schemas.ts';
import {
  activateWebhook,
  createWebhook,
  deleteWebhook,
  lastDeliveries,
  listDeliveries,
  listWebhooks,
  replayDelivery,
  sendTestEvent,
} from '../features/webhooks/webhooks.service.ts';
import { scopeToOrg } from '../org-scope.ts';
import { asText } from '../schemas.ts';
import { ALL_SCOPES, SCOPES } from '../scopes.ts';
import { publicProcedure, router } from '../trpc.ts';
import { issueApiKey, listApiKeys, revokeApiKey, rotateApiKey } from './api-keys.ts';
import { listAudit, recordAudit } from './audit.ts';
import { dashboardSessionOf } from './dashboard-auth.ts';
import {
  acceptInvitation,
  createInvitation,
  describeInvitation,
  INVITATION_PATH,
  listInvitations,
  revokeInvitation,
} from './invitations.ts';
import { organizationName } from './organizations.ts';
import { listPeople, removePerson, setPersonRole } from './people.ts';

/** Days the usage chart covers. */
const USAGE_CHART_DAYS = 30;

/**
 * This server's origin as a browser names it: the configured public URL's, else `http://` and the Host the
 * request came to (the server itself speaks plain HTTP; behind TLS, CRM_PUBLIC_URL says so).
 */
function ownOrigin(ctx: Pick<Context, 'headers' | 'services'>): string | undefined {
  const publicUrl = ctx.services.config.admin.publicUrl;
  if (publicUrl) return new URL(publicUrl).origin;
  const host = headerValue(ctx, 'host');
  return host && URL.canParse(`http://${host}`) ? new URL(`http://${host}`).origin : undefined;
}

/**
 * A state change through the dashboard must come from the dashboard's own pages: the browser's Origin
 * (or, without one, Fetch Metadata) has to name this server, scheme, host and port alike; cookies are
 * SameSite=Lax besides.
 */
function fromOwnPages(ctx: Pick<Context, 'headers' | 'services'>): boolean {
  const origin = headerValue(ctx, 'origin');
  if (!origin) return headerValue(ctx, 'sec-fetch-site') === 'same-origin';
  return origin === ownOrigin(ctx);
}

const dashboardProcedure = publicProcedure.use(({ ctx, type, next }) => {
  if (type === 'mutation' && !fromOwnPages(ctx))
    throw new ApiError(
      'forbidden',
      'Dashboard changes must come from the dashboard itself (Origin check failed)',
    );
  return next();
});

/**
 * Dashboard calls: the person comes from the session cookie (never an API key) and the unit of work is
 * scoped to their organization, so the feature services read and write only its rows. Dashboard calls
 * are not API calls: they count against no rate limit or quota.
 */
const sessionProcedure = dashboardProcedure.use(async ({ ctx, next }) => {
  const auth = ctx.services.dashboardAuth;
  const session = auth ? await dashboardSessionOf(auth, ctx.headers) : undefined;
  if (!session) throw new ApiError('not_signed_in', 'Sign in to use the dashboard');
  scopeToOrg(ctx.em, session.orgId);
  const actor = { type: 'user' as const, user_id: session.userId, via: 'dashboard' as const };
  return runAsCall({ actor, requestId: ctx.requestId }, () =>
    next({ ctx: { ...ctx, dashboard: session, principal: { orgId: session.orgId } } }),
  );
});

/** Changes only admins may make; a member is refused here, whatever the page showed. */
const adminProcedure = sessionProcedure.use(({ ctx, next }) => {
  if (ctx.dashboard.role !== 'admin')
    throw new ApiError('forbidden', 'Only an admin can do this; ask an admin of your organization');
  return next();
});

const Id = z.object({ id: z.uuid() });
const Page = z.object({
  limit: z.number().int().min(1).max(100).default(25),
  offset: z.number().int().min(0).default(0),
});

/**
 * What each field type takes, as the custom-fields service checks it: the dashboard's form shows the
 * inputs a type takes from this, and keeps no list of its own.
 */
const FIELD_TYPE_RULES = FIELD_TYPES.map((type) => ({
  type,
  options: SELECT_TYPES.has(type),
  range: RANGED_TYPES.has(type),
  text: TEXT_TYPES.has(type),
  unique: UNIQUE_TYPES.has(type),
  indexed: INDEXED_TYPES.has(type),
}));

/** A schema file as pasted: its text, read by the same function as `crm schema plan|apply` read a file. */
const SchemaFileText = z.object({ text: z.string().max(MAX_BODY_BYTES) });

/** An applied plan in a line of the audit log: "added deals.region; changed deals.arr (label)". */
function describeSteps(steps: readonly SchemaStep[]): string {
  const verbs = { add: 'added', change: 'changed', convert: 'converted', archive: 'archived' } as const;
  return steps
    .map((step) => {
      const changed = step.changes ? Object.keys(step.changes) : [];
      return `${verbs[step.action]} ${step.object}.${step.key}${changed.length > 0 ? ` (${changed.join(', ')})` : ''}`;
    })
    .join('; ');
}

/** The origin links are made for: the configured public URL, else the address the browser used. */
function originOf(ctx: Pick<Context, 'headers' | 'services'>): string {
  return ctx.services.config.admin.publicUrl ?? `http://${headerValue(ctx, 'host') ?? 'localhost'}`;
}

export const adminRouter = router({
  me: sessionProcedure.query(async ({ ctx }) => {
    // Reading usage records any alert it calls for, as GET /usage does: the banner is never behind.
    const usage = await usageOf(ctx);
    const { userId, email, name, role, orgId } = ctx.dashboard;
    return {
      user: { id: userId, email, name, role },
      org: { id: orgId, name: await organizationName(ctx.em) },
      // The banner: each quota at a threshold or used up now (the month's recorded alerts are on Usage).
      quota_notices: quotaNotices(usage.quotas),
    };
  }),

  keys: router({
    list: sessionProcedure.query(async ({ ctx }) =>
      (await listApiKeys(ctx.em)).map(({ org_id: _org, ...key }) => key),
    ),
    create: adminProcedure
      .input(
        z.object({
          name: asText(z.string().trim().min(1, 'name: required').max(100)),
          scopes: z
            .array(z.enum([ALL_SCOPES, ...SCOPES]))
            .min(1, 'scopes: choose at least one')
            .optional(),
          expires_at: z.iso.datetime({ offset: true }).nullable().optional(),
        }),
      )
      .mutation(async ({ ctx, input }) => {
        const grant = {
          name: input.name,
          scopes: input.scopes,
          expiresAt: input.expires_at ? new Date(input.expires_at) : null,
        };
        const issued = await issueApiKey(ctx.em, ctx.dashboard.orgId, grant, { actor: ctx.dashboard.email });
        return {
          ...issued,
          name: input.name,
          prefix: issued.api_key.slice(0, 7),
          created_at: new Date().toISOString(),
        };
      }),
    rotate: adminProcedure
      .input(
        z.object({
          key_id: z.uuid(),
          overlap_hours: z
            .number()
            .min(0)
            .max(24 * 30)
            .default(24),
        }),
      )
      .mutation(async ({ ctx, input }) => {
        const rotated = await rotateApiKey(ctx.em, input.key_id, input.overlap_hours * 3_600_000, {
          actor: ctx.dashboard.email,
        });
        if (!rotated) throw notFound('API key');
        return rotated;
      }),
    revoke: adminProcedure.input(z.object({ key_id: z.uuid() })).mutation(async ({ ctx, input }) => {
      const revoked = await revokeApiKey(ctx.em, input.key_id, { actor: ctx.dashboard.email });
      if (!revoked) throw notFound('API key');
      return { key_id: revoked.key_id, revoked_at: revoked.revoked_at as string };
    }),
  }),

  usage: router({
    summary: sessionProcedure.query(async ({ ctx }) => ({
      usage: await usageOf(ctx),
      daily: await ctx.services.limits.dailyUsage(ctx.dashboard.orgId, USAGE_CHART_DAYS),
    })),
  }),

  webhooks: router({
    eventTypes: sessionProcedure.query(() => [...WEBHOOK_EVENT_TYPES]),
    list: sessionProcedure.query(async ({ ctx }) => {
      const [endpoints, last] = await Promise.all([listWebhooks(ctx.em), lastDeliveries(ctx.em)]);
      return endpoints.map((e) => ({ ...e, last_delivery: last.get(e.id) ?? null }));
    }),
    create: adminProcedure.input(WebhookCreateInput).mutation(async ({ ctx, input }) => {
      const created = await createWebhook(ctx, input);
      await recordAudit(ctx.em, {
        orgId: ctx.dashboard.orgId,
        actor: ctx.dashboard.email,
        action: 'webhook.created',
        target: created.url,
        details: created.events.join(', '),
      });
      return created;
    }),
    delete: adminProcedure.input(Id).mutation(async ({ ctx, input }) => {
      const deleted = await deleteWebhook(ctx.em, input.id);
      await recordAudit(ctx.em, {
        orgId: ctx.dashboard.orgId,
        actor: ctx.dashboard.email,
        action: 'webhook.deleted',
        target: deleted.url,
      });
      return { success: true as const };
    }),
    activate: adminProcedure.input(Id).mutation(async ({ ctx, input }) => {
      const endpoint = await activateWebhook(ctx.em, input.id);
      await recordAudit(ctx.em, {
        orgId: ctx.dashboard.orgId,
        actor: ctx.dashboard.email,
        action: 'webhook.activated',
        target: endpoint.url,
      });
      return endpoint;
    }),
    sendTest: adminProcedure.input(Id).mutation(({ ctx, input }) => sendTestEvent(ctx.em, input.id)),
    deliveries: sessionProcedure
      .input(
        WebhookDeliveryListQuery.extend({
          limit: z.number().int().min(1).max(100).default(25),
          offset: z.number().int().min(0).default(0),
        }),
      )
      .query(({ ctx, input }) => listDeliveries(ctx.em, input)),
    replay: adminProcedure
      .input(z.object({ id: z.uuid(), delivery_id: z.uuid() }))
      .mutation(({ ctx, input }) => replayDelivery(ctx.em, input)),
  }),

  team: router({
    list: sessionProcedure.query(async ({ ctx }) => ({
      members: (await listPeople(ctx.em)).map(({ org_id: _org, ...p }) => p),
      invitations: await listInvitations(ctx.em),
    })),
    invite: adminProcedure
      .input(z.object({ role: z.enum(USER_ROLES), email: z.email().optional() }))
      .mutation(async ({ ctx, input }) => {
        const created = await createInvitation(
          ctx.em,
          { orgId: ctx.dashboard.orgId, role: input.role, email: input.email ?? null },
          { actor: ctx.dashboard.email },
        );
        return {
          id: created.id,
          url: `${originOf(ctx)}${INVITATION_PATH}${created.token}`,
          expires_at: created.expires_at,
        };
      }),
    revokeInvitation: adminProcedure.input(Id).mutation(async ({ ctx, input }) => {
      await revokeInvitation(ctx.em, input.id, { actor: ctx.dashboard.email });
      return { success: true as const };
    }),
    remove: adminProcedure.input(z.object({ user_id: z.uuid() })).mutation(async ({ ctx, input }) => {
      await removePerson(ctx.em, input.user_id, { actor: ctx.dashboard.email });
      return { success: true as const };
    }),
    setRole: adminProcedure
      .input(z.object({ user_id: z.uuid(), role: z.enum(USER_ROLES) }))
      .mutation(async ({ ctx, input }) => {
        const { org_id: _org, ...person } = await setPersonRole(ctx.em, input.user_id, input.role, {
          actor: ctx.dashboard.email,
        });
        return person;
      }),
  }),

  /**
   * Custom fields: the same service functions as `/custom-fields` and `crm schema` (one set of rules),
   * each change recorded in the audit log. Members read; only admins change.
   */
  fields: router({
    list: sessionProcedure.query(async ({ ctx }) => ({
      objects: await Promise.all(
        CUSTOM_OBJECTS.map(async (object) => ({
          object,
          fields: await listCustomFields(ctx.em, object, true),
        })),
      ),
      types: FIELD_TYPE_RULES,
      ai_hints: [...AI_HINTS],
    })),
    create: adminProcedure
      .input(CustomFieldCreateInput.extend(ObjectPath.shape))
      .mutation(({ ctx, input: { object, ...field } }) =>
        // The change and its audit entry commit together, as a key's or a person's do.
        schemaChange(ctx.em, async (tx) => {
          const created = await createCustomField(tx, object, field);
          await recordAudit(tx, {
            orgId: ctx.dashboard.orgId,
            actor: ctx.dashboard.email,
            action: 'custom_field.created',
            target: `${object}.${created.key}`,
            details: [
              created.type,
              created.required && 'required',
              created.unique && 'unique',
              created.indexed && 'indexed',
            ]
              .filter(Boolean)
              .join(', '),
          });
          return created;
        }),
      ),
    /** An index on the field made or dropped (PATCH /custom-fields/{object}/{key} with `indexed`). */
    setIndexed: adminProcedure
      .input(FieldPath.extend({ indexed: z.boolean() }))
      .mutation(({ ctx, input: { object, key, indexed } }) =>
        schemaChange(ctx.em, async (tx) => {
          const before = await getCustomField(tx, object, key);
          const changed = await updateCustomField(tx, object, key, { indexed });
          if (before.indexed !== changed.indexed)
            await recordAudit(tx, {
              orgId: ctx.dashboard.orgId,
              actor: ctx.dashboard.email,
              action: 'custom_field.changed',
              target: `${object}.${key}`,
              details: indexed ? 'indexed' : 'index dropped',
            });
          return changed;
        }),
      ),
    archive: adminProcedure.input(FieldPath).mutation(({ ctx, input }) =>
      schemaChange(ctx.em, async (tx) => {
        const before = await getCustomField(tx, input.object, input.key);
        const archived = await archiveCustomField(tx, input.object, input.key);
        // Archiving an archived field changes nothing, and records nothing.
        if (!before.archived)
          await recordAudit(tx, {
            orgId: ctx.dashboard.orgId,
            actor: ctx.dashboard.email,
            action: 'custom_field.archived',
            target: `${input.object}.${input.key}`,
          });
        return archived;
      }),
    ),
    /** The fields as `crm schema export` prints them: where a pasted file starts from. */
    schemaExport: sessionProcedure.query(({ ctx }) => exportSchema(ctx.em)),
    /** Changes nothing: a member may check a file too. A mutation, for the file's size (no URL). */
    schemaPlan: sessionProcedure
      .input(SchemaFileText)
      .mutation(({ ctx, input }) => planSchema(ctx.em, parseSchemaFile(input.text))),
    schemaApply: adminProcedure.input(SchemaFileText).mutation(({ ctx, input }) => {
      const file = parseSchemaFile(input.text);
      return schemaChange(ctx.em, async (tx) => {
        const applied = await applySchema(tx, file);
        if (applied.steps.length > 0)
          await recordAudit(tx, {
            orgId: ctx.dashboard.orgId,
            actor: ctx.dashboard.email,
            action: 'custom_fields.applied',
            target: 'schema file',
            details: describeSteps(applied.steps),
          });
        return applied;
      });
    }),
  }),

  audit: router({
    list: sessionProcedure
      .input(Page.optional())
      .query(({ ctx, input }) => listAudit(ctx.em, input ?? { limit: 25, offset: 0 })),
  }),

  /** Before anyone is signed in: the page an invitation link (or the first admin's link) opens. */
  invitation: router({
    get: dashboardProcedure
      .input(z.object({ token: asText(z.string().min(1).max(200)) }))
      .query(({ ctx, input }) => describeInvitation(ctx.em, input.token)),
    accept: dashboardProcedure
      .input(
        z.object({
          token: asText(z.string().min(1).max(200)),
          name: asText(z.string().trim().min(1, 'name: required').max(200)),
          email: z.string().max(254),
          password: z.string().max(200),
        }),
      )
      .mutation(async ({ ctx, input }) => {
        const auth = ctx.services.dashboardAuth;
        if (!auth) throw new ApiError('not_found', 'The dashboard is not served by this process');
        const person = await acceptInvitation(ctx.em, input.token, input);
        // Signed in at once: the session cookie comes back with this answer.
        const signedIn = await auth.api.signInEmail({
          body: { email: person.email, password: input.password },
          headers: new Headers({ 'user-agent': headerValue(ctx, 'user-agent') ?? '' }),
          returnHeaders: true,
        });
        const cookie = signedIn.headers.get('set-cookie');
        if (cookie) ctx.response.headers['set-cookie'] = cookie;
        return { ok: true as const };
      }),
  }),
});

export type AdminRouter = typeof adminRouter;
