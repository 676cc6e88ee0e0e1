import { rmSync } from 'node:fs';
import { openDatabase } from '@crm/db';
import { verifyPassword } from 'better-auth/crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migratedDataDir } from '../../server/test/harness.ts';
import { crm as runCli } from './crm.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The CLI in this process (what `npm run --silent crm -- …` runs), on one embedded database. */
describe('crm user … (people who sign in to the dashboard), on the embedded database', () => {
  let dataDir: string;
  const crm = (...args: string[]) => runCli({ CRM_DATA_DIR: dataDir, LOG_LEVEL: 'silent' }, ...args);
  async function storedHash(userId: string): Promise<string> {
    const db = await openDatabase({ kind: 'pglite', dataDir }, 'test');
    try {
      const rows = await db.orm.em
        .fork()
        .execute<{ password: string }[]>('select password from accounts where user_id = ?', [userId]);
      return rows[0]?.password ?? '';
    } finally {
      await db.close();
    }
  }
  let orgId: string;

  beforeAll(async () => {
    dataDir = migratedDataDir('crm-cli-users-');
    orgId = (await crm('org', 'create', 'People Inc')).lines[0]?.org_id as string;
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('user create prints the person and a generated password once; only its hash is stored', async () => {
    const created = await crm('user', 'create', '--org', orgId, '--email', 'Ada@Example.com');
    expect(created.code, created.stderr).toBe(0);
    expect(created.lines).toEqual([
      {
        user_id: expect.stringMatching(UUID),
        email: 'ada@example.com',
        role: 'admin',
        password: expect.any(String),
      },
    ]);
    const { user_id, password } = created.lines[0] as { user_id: string; password: string };
    expect(password.length).toBeGreaterThanOrEqual(20);
    const hash = await storedHash(user_id);
    expect(hash).not.toContain(password);
    expect(await verifyPassword({ hash, password })).toBe(true);
  });

  it('user list shows people without passwords; --org narrows it', async () => {
    await crm(
      'user',
      'create',
      '--org',
      orgId,
      '--email',
      'bob@example.com',
      '--role',
      'member',
      '--name',
      'Bob',
    );
    const listed = await crm('user', 'list', '--org', orgId);
    expect(listed.code).toBe(0);
    expect(listed.lines.map((p) => [p.email, p.role, p.name])).toEqual([
      ['ada@example.com', 'admin', 'ada'],
      ['bob@example.com', 'member', 'Bob'],
    ]);
    expect(JSON.stringify(listed.lines)).not.toMatch(/password/);
  });

  it('refuses a taken e-mail, a bad role and a bad e-mail with one line each', async () => {
    const taken = await crm('user', 'create', '--org', orgId, '--email', 'ADA@example.com');
    expect(taken.code).toBe(1);
    expect(taken.stderr).toBe('error: email: ada@example.com already has an account\n');
    const role = await crm('user', 'create', '--org', orgId, '--email', 'c@example.com', '--role', 'owner');
    expect(role.code).toBe(1);
    expect(role.stderr).toContain('--role must be admin or member');
    const email = await crm('user', 'create', '--org', orgId, '--email', 'not-an-email');
    expect(email.code).toBe(1);
    expect(email.stderr).toContain('email: not an e-mail address');
  });

  it('user reset-password prints a new password that replaces the old one', async () => {
    const ada = (await crm('user', 'list')).lines.find((p) => p.email === 'ada@example.com') as {
      user_id: string;
    };
    const reset = await crm('user', 'reset-password', ada.user_id);
    expect(reset.code, reset.stderr).toBe(0);
    const { password } = reset.lines[0] as { password: string };
    expect(await verifyPassword({ hash: await storedHash(ada.user_id), password })).toBe(true);
  });

  it('user remove removes a member but never the last admin', async () => {
    const people = (await crm('user', 'list', '--org', orgId)).lines;
    const ada = people.find((p) => p.email === 'ada@example.com') as { user_id: string };
    const bob = people.find((p) => p.email === 'bob@example.com') as { user_id: string };
    const refused = await crm('user', 'remove', ada.user_id);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('at least one admin');
    const removed = await crm('user', 'remove', bob.user_id);
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.lines).toEqual([{ user_id: bob.user_id, email: 'bob@example.com', removed: true }]);
    expect((await crm('user', 'list', '--org', orgId)).lines.map((p) => p.email)).toEqual([
      'ada@example.com',
    ]);
  });

  it('org delete removes an organization with its people and keys; a second time says it does not exist', async () => {
    const other = (await crm('org', 'create', 'Short-lived')).lines[0] as { org_id: string; key_id: string };
    await crm('user', 'create', '--org', other.org_id, '--email', 'temp@example.com');
    const deleted = await crm('org', 'delete', other.org_id);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.lines).toEqual([{ org_id: other.org_id, deleted: true }]);
    expect((await crm('org', 'list')).lines.map((o) => o.org_id)).not.toContain(other.org_id);
    expect((await crm('user', 'list')).lines.map((p) => p.email)).not.toContain('temp@example.com');
    expect((await crm('key', 'list')).lines.map((k) => k.key_id)).not.toContain(other.key_id);
    const again = await crm('org', 'delete', other.org_id);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(`error: organization ${other.org_id} does not exist\n`);
  });
});
