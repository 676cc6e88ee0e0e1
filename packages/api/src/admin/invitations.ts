import { createHash, randomBytes } from 'node:crypto';
import { type EntityManager, sqlOf, transaction, type UserRole, uuidv7 } from '@crm/db';
import { ApiError, notFound } from '../errors.ts';
import { currentOrg, orgDb, unscopedDb } from '../org-scope.ts';
import { recordAudit } from './audit.ts';
import { createPerson, normalizeEmail } from './people.ts';

/** An admin's invitation link lasts a week; the first admin's sign-in link, printed at first start, a day. */
export const INVITATION_TTL_MS = 7 * 24 * 3600_000;
export const FIRST_ADMIN_TTL_MS = 24 * 3600_000;
/** The dashboard page an invitation link opens. */
export const INVITATION_PATH = '/admin/invite/';

const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

export interface InvitationDto {
  id: string;
  role: UserRole;
  email: string | null;
  created_at: string;
  expires_at: string;
  invited_by: string | null;
}

/** Creates a single-use link to join `orgId`; the token is returned once and only its hash is stored. */
export async function createInvitation(
  em: EntityManager,
  input: { orgId: string; role: UserRole; email?: string | null; ttlMs?: number },
  acting: { actor: string },
): Promise<{ id: string; token: string; expires_at: string }> {
  const email = input.email ? normalizeEmail(input.email) : null;
  const token = randomBytes(24).toString('base64url');
  const id = uuidv7();
  const now = new Date();
  const expiresAt = new Date(now.getTime() + (input.ttlMs ?? INVITATION_TTL_MS));
  await transaction(em, async (tx) => {
    await sqlOf(tx)
      .insertInto('invitations')
      .values({
        id,
        org_id: input.orgId,
        token_hash: hashToken(token),
        role: input.role,
        email,
        invited_by: acting.actor,
        created_at: now,
        expires_at: expiresAt,
        accepted_at: null,
      })
      .execute();
    await recordAudit(tx, {
      orgId: input.orgId,
      actor: acting.actor,
      action: 'member.invited',
      target: email,
      details: `role ${input.role}, valid until ${expiresAt.toISOString()}`,
    });
  });
  return { id, token, expires_at: expiresAt.toISOString() };
}

/** The pending invitations (not accepted, not expired) of the organization `em` is scoped to. */
export async function listInvitations(em: EntityManager): Promise<InvitationDto[]> {
  const rows = await orgDb(em)
    .selectFrom('invitations')
    .select(['id', 'role', 'email', 'created_at', 'expires_at', 'invited_by'])
    .where('accepted_at', 'is', null)
    .where('expires_at', '>', new Date())
    .orderBy('created_at', 'desc')
    .execute();
  return rows.map((r) => ({
    ...r,
    created_at: new Date(r.created_at).toISOString(),
    expires_at: new Date(r.expires_at).toISOString(),
  }));
}

/** Revokes a pending invitation of the organization `em` is scoped to (another's is a missing one). */
export async function revokeInvitation(
  em: EntityManager,
  id: string,
  acting: { actor: string },
): Promise<void> {
  await transaction(em, async (tx) => {
    const deleted = await orgDb(tx)
      .deleteFrom('invitations')
      .where('id', '=', id)
      .where('accepted_at', 'is', null)
      .returning(['email', 'role'])
      .executeTakeFirst();
    if (!deleted) throw notFound('Invitation');
    await recordAudit(tx, {
      orgId: currentOrg(tx),
      actor: acting.actor,
      action: 'invitation.revoked',
      target: deleted.email,
      details: `role ${deleted.role}`,
    });
  });
}

const INVALID = 'This invitation link is invalid, expired or already used';

/** What the invitation page shows before someone accepts. */
export async function describeInvitation(
  em: EntityManager,
  token: string,
): Promise<{ org_name: string; role: UserRole; email: string | null; expires_at: string }> {
  const row = await unscopedDb(em, 'an invitation link is opened before anyone signs in: found by its token')
    .selectFrom('invitations as i')
    .innerJoin('organizations as o', 'o.id', 'i.org_id')
    .select(['o.name as org_name', 'i.role', 'i.email', 'i.expires_at'])
    .where('i.token_hash', '=', hashToken(token))
    .where('i.accepted_at', 'is', null)
    .where('i.expires_at', '>', new Date())
    .executeTakeFirst();
  if (!row) throw new ApiError('not_found', INVALID);
  return { ...row, expires_at: new Date(row.expires_at).toISOString() };
}

/**
 * Uses an invitation once: marks it accepted and creates the person, in one transaction, so a link
 * clicked twice at once makes one account.
 */
export async function acceptInvitation(
  em: EntityManager,
  token: string,
  person: { name: string; email: string; password: string },
): Promise<{ user_id: string; email: string; org_id: string }> {
  return transaction(em, async (tx) => {
    const invitation = await unscopedDb(
      tx,
      'an invitation link is accepted before anyone signs in: found by its token',
    )
      .updateTable('invitations')
      .set({ accepted_at: new Date() })
      .where('token_hash', '=', hashToken(token))
      .where('accepted_at', 'is', null)
      .where('expires_at', '>', new Date())
      .returning(['org_id', 'role', 'email'])
      .executeTakeFirst();
    if (!invitation) throw new ApiError('not_found', INVALID);
    const email = normalizeEmail(person.email);
    if (invitation.email && invitation.email !== email)
      throw new ApiError('invalid_request', `email: this invitation is for ${invitation.email}`);
    const created = await createPerson(
      tx,
      {
        orgId: invitation.org_id,
        email,
        name: person.name,
        role: invitation.role,
        password: person.password,
      },
      { actor: email, action: 'member.joined' },
    );
    return { user_id: created.user_id, email: created.email, org_id: invitation.org_id };
  });
}
