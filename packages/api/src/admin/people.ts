import { randomBytes } from 'node:crypto';
import { type EntityManager, sqlOf, transaction, type UserRole, uuidv7 } from '@crm/db';
import { hashPassword } from 'better-auth/crypto';
import { z } from 'zod';
import { ApiError, notFound } from '../errors.ts';
import { currentOrg, orgDb, unscopedDb } from '../org-scope.ts';
import { type AuditAction, recordAudit } from './audit.ts';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from './dashboard-auth.ts';
import { organizationExists } from './organizations.ts';

/** better-auth's provider id for e-mail and password accounts. */
const CREDENTIAL_PROVIDER = 'credential';

const Email = z.email().max(254);

/** E-mails are compared lower-cased: better-auth lower-cases the one typed at sign-in too. */
export function normalizeEmail(email: string): string {
  const trimmed = email.trim().toLowerCase();
  if (!Email.safeParse(trimmed).success)
    throw new ApiError('invalid_request', `email: not an e-mail address: ${JSON.stringify(email)}`);
  return trimmed;
}

/** The check before the insert can lose a race with another one for the same e-mail: the index decides. */
async function withUniqueEmail<T>(email: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if ((err as { code?: unknown }).code === '23505')
      throw new ApiError('invalid_request', `email: ${email} already has an account`);
    throw err;
  }
}

export function checkPassword(password: string): void {
  if (password.length < MIN_PASSWORD_LENGTH)
    throw new ApiError('invalid_request', `password: must be at least ${MIN_PASSWORD_LENGTH} characters`);
  if (password.length > MAX_PASSWORD_LENGTH)
    throw new ApiError('invalid_request', `password: must be at most ${MAX_PASSWORD_LENGTH} characters`);
}

/** 144 random bits, 24 characters: shown once, stored only as better-auth's scrypt hash. */
export function generatePassword(): string {
  return randomBytes(18).toString('base64url');
}

export interface PersonDto {
  user_id: string;
  org_id: string;
  email: string;
  name: string;
  role: UserRole;
  created_at: string;
}

/** Who acts: a person's e-mail (dashboard) or "CLI"; the organization is the one `em` is scoped to. */
export interface Acting {
  actor: string;
}

/**
 * Adds a person to an organization with an e-mail and password account (better-auth's tables), and
 * records it in the audit log. A password is generated when none is given; it is returned, never stored.
 */
export async function createPerson(
  em: EntityManager,
  input: { orgId: string; email: string; name?: string; role: UserRole; password?: string },
  acting: { actor: string; action?: AuditAction },
): Promise<{ user_id: string; email: string; role: UserRole; password: string }> {
  const email = normalizeEmail(input.email);
  const password = input.password ?? generatePassword();
  checkPassword(password);
  const hash = await hashPassword(password);
  const userId = uuidv7();
  await withUniqueEmail(email, () =>
    transaction(em, async (tx) => {
      if (!(await organizationExists(tx, input.orgId))) throw notFound('Organization');
      const taken = await unscopedDb(tx, 'an e-mail signs in to one account, whatever its organization')
        .selectFrom('users')
        .select('id')
        .where('email', '=', email)
        .executeTakeFirst();
      if (taken) throw new ApiError('invalid_request', `email: ${email} already has an account`);
      const now = new Date();
      await sqlOf(tx)
        .insertInto('users')
        .values({
          id: userId,
          org_id: input.orgId,
          role: input.role,
          name: input.name?.trim() || email.split('@')[0] || email,
          email,
          email_verified: false,
          created_at: now,
          updated_at: now,
        })
        .execute();
      await tx.execute(
        `insert into accounts (id, user_id, account_id, provider_id, password, created_at, updated_at)
       values (?, ?, ?, ?, ?, ?, ?)`,
        [uuidv7(), userId, userId, CREDENTIAL_PROVIDER, hash, now, now],
      );
      await recordAudit(tx, {
        orgId: input.orgId,
        actor: acting.actor,
        action: acting.action ?? 'member.created',
        target: email,
        details: `role ${input.role}`,
      });
    }),
  );
  return { user_id: userId, email, role: input.role, password };
}

function toPersonDto(row: {
  id: string;
  org_id: string;
  email: string;
  name: string;
  role: UserRole;
  created_at: Date;
}): PersonDto {
  return {
    user_id: row.id,
    org_id: row.org_id,
    email: row.email,
    name: row.name,
    role: row.role,
    created_at: new Date(row.created_at).toISOString(),
  };
}

const PERSON_COLUMNS = ['id', 'org_id', 'email', 'name', 'role', 'created_at'] as const;

/** The people of the organization `em` is scoped to, in the order they joined. */
export function listPeople(em: EntityManager): Promise<PersonDto[]> {
  return peopleIn(orgDb(em));
}

/** Every organization's people (`crm user list` without `--org`). */
export function listEveryPerson(em: EntityManager): Promise<PersonDto[]> {
  return peopleIn(unscopedDb(em, 'crm user list without --org: every organization’s people'));
}

/** The people `db` sees, in the order they joined. */
async function peopleIn(db: ReturnType<typeof orgDb>): Promise<PersonDto[]> {
  const people = await db
    .selectFrom('users')
    .select(PERSON_COLUMNS)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return people.map(toPersonDto);
}

/**
 * The person, of the organization `tx` is scoped to (another organization's answers exactly like a
 * missing one), locked for the rest of the transaction together with the organization's admins, so two
 * admins removing or demoting each other at once cannot leave the organization without one.
 */
async function lockPerson(tx: EntityManager, userId: string) {
  const db = orgDb(tx);
  const person = await db
    .selectFrom('users')
    .select(PERSON_COLUMNS)
    .where('id', '=', userId)
    .executeTakeFirst();
  if (!person) throw notFound('Person');
  const admins = await db.selectFrom('users').select('id').where('role', '=', 'admin').forUpdate().execute();
  return { person, admins: admins.length };
}

const LAST_ADMIN = 'An organization needs at least one admin: make someone else an admin first';

export async function removePerson(em: EntityManager, userId: string, acting: Acting): Promise<PersonDto> {
  return transaction(em, async (tx) => {
    const { person, admins } = await lockPerson(tx, userId);
    if (person.role === 'admin' && admins <= 1) throw new ApiError('last_admin', LAST_ADMIN);
    // Their sessions and password go with them (foreign keys cascade).
    await orgDb(tx).deleteFrom('users').where('id', '=', userId).execute();
    await recordAudit(tx, {
      orgId: currentOrg(tx),
      actor: acting.actor,
      action: 'member.removed',
      target: person.email,
    });
    return toPersonDto(person);
  });
}

export async function setPersonRole(
  em: EntityManager,
  userId: string,
  role: UserRole,
  acting: Acting,
): Promise<PersonDto> {
  return transaction(em, async (tx) => {
    const { person, admins } = await lockPerson(tx, userId);
    if (person.role === role) return toPersonDto(person);
    if (person.role === 'admin' && admins <= 1) throw new ApiError('last_admin', LAST_ADMIN);
    await orgDb(tx)
      .updateTable('users')
      .set({ role, updated_at: new Date() })
      .where('id', '=', userId)
      .execute();
    await recordAudit(tx, {
      orgId: currentOrg(tx),
      actor: acting.actor,
      action: 'member.role_changed',
      target: person.email,
      details: `${person.role} → ${role}`,
    });
    return toPersonDto({ ...person, role });
  });
}

/** A new generated password, shown once; every session of the person ends. */
export async function resetPassword(
  em: EntityManager,
  userId: string,
  acting: Acting,
): Promise<{ user_id: string; email: string; password: string }> {
  const password = generatePassword();
  const hash = await hashPassword(password);
  return transaction(em, async (tx) => {
    const { person } = await lockPerson(tx, userId);
    const now = new Date();
    const updated = await tx.execute<{ id: string }[]>(
      'update accounts set password = ?, updated_at = ? where user_id = ? and provider_id = ? returning id',
      [hash, now, userId, CREDENTIAL_PROVIDER],
    );
    if (updated.length === 0)
      await tx.execute(
        `insert into accounts (id, user_id, account_id, provider_id, password, created_at, updated_at)
         values (?, ?, ?, ?, ?, ?, ?)`,
        [uuidv7(), userId, userId, CREDENTIAL_PROVIDER, hash, now, now],
      );
    await tx.execute('delete from sessions where user_id = ?', [userId]);
    await recordAudit(tx, {
      orgId: currentOrg(tx),
      actor: acting.actor,
      action: 'member.password_reset',
      target: person.email,
    });
    return { user_id: userId, email: person.email, password };
  });
}
