import { type EntityManager, sqlOf, uuidv7 } from '@crm/db';
import { orgDb } from '../org-scope.ts';

/** What the audit log records; the dashboard shows these names as they are. */
export type AuditAction =
  | 'api_key.created'
  | 'api_key.revoked'
  | 'api_key.rotated'
  | 'webhook.created'
  | 'webhook.deleted'
  | 'webhook.activated'
  | 'member.invited'
  | 'member.joined'
  | 'member.created'
  | 'member.removed'
  | 'member.role_changed'
  | 'member.password_reset'
  | 'invitation.revoked'
  | 'custom_field.created'
  | 'custom_field.changed'
  | 'custom_field.archived'
  | 'custom_fields.applied';

/** Who acted: a person's e-mail from the dashboard, or "CLI" for the admin command line. */
export const CLI_ACTOR = 'CLI';

export interface AuditInput {
  orgId: string;
  actor: string;
  action: AuditAction;
  target?: string | null;
  details?: string | null;
}

/** Appends to the organization's audit log, in the caller's transaction when `em` is one. */
export async function recordAudit(em: EntityManager, entry: AuditInput): Promise<void> {
  await sqlOf(em)
    .insertInto('audit_log')
    .values({
      id: uuidv7(),
      org_id: entry.orgId,
      at: new Date(),
      actor: entry.actor,
      action: entry.action,
      target: entry.target ?? null,
      details: entry.details ?? null,
    })
    .execute();
}

export interface AuditEntryDto {
  id: string;
  at: string;
  actor: string;
  action: string;
  target: string | null;
  details: string | null;
}

/** The audit log of the organization `em` is scoped to, newest first. */
export async function listAudit(
  em: EntityManager,
  page: { limit: number; offset: number },
): Promise<{ data: AuditEntryDto[]; meta: { total: number; limit: number; offset: number } }> {
  const db = orgDb(em);
  const [rows, counted] = await Promise.all([
    db
      .selectFrom('audit_log')
      .select(['id', 'at', 'actor', 'action', 'target', 'details'])
      .orderBy('at', 'desc')
      .orderBy('id', 'desc')
      .limit(page.limit)
      .offset(page.offset)
      .execute(),
    db
      .selectFrom('audit_log')
      .select((eb) => eb.fn.countAll<string>().as('total'))
      .executeTakeFirstOrThrow(),
  ]);
  return {
    data: rows.map((r) => ({ ...r, at: new Date(r.at).toISOString() })),
    meta: { total: Number(counted.total), limit: page.limit, offset: page.offset },
  };
}
