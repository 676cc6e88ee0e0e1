import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { ApiKey, type EntityManager, Organization, transaction } from '@crm/db';
import { CLI_ACTOR, recordAudit } from './audit.ts';

/** Keys look like `ck_` + 32 url-safe characters (192 random bits), matching the contract's `^[a-z]{2}_`. */
export const API_KEY_PREFIX = 'ck_';
const API_KEY_PATTERN = /^[a-z]{2}_[A-Za-z0-9_-]{32}$/;

/**
 * SHA-256 is enough for keys with 192 random bits (a slow password hash protects low-entropy secrets;
 * it would only slow every request down here), and it lets the lookup be one unique-index probe.
 */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

export function generateApiKey(): string {
  return `${API_KEY_PREFIX}${randomBytes(24).toString('base64url')}`;
}

export function looksLikeApiKey(key: string): boolean {
  return API_KEY_PATTERN.test(key);
}

export interface IssuedKey {
  key_id: string;
  api_key: string;
}

/**
 * Creates a key and returns its plaintext, the only time it exists. The one way keys are made (CLI,
 * dashboard, first start); each is recorded in the organization's audit log under `actor`.
 */
export async function issueApiKey(
  em: EntityManager,
  orgId: string,
  name?: string,
  acting: { actor: string } = { actor: CLI_ACTOR },
): Promise<IssuedKey> {
  return transaction(em, async (tx) => {
    const org = await tx.findOne(Organization, { id: orgId });
    if (!org) throw new Error(`Organization ${orgId} does not exist`);
    const plaintext = generateApiKey();
    const key = tx.create(ApiKey, {
      orgId,
      name: name ?? null,
      prefix: plaintext.slice(0, 7),
      keyHash: hashApiKey(plaintext),
      createdBy: acting.actor,
    });
    await tx.flush();
    await recordAudit(tx, {
      orgId,
      actor: acting.actor,
      action: 'api_key.created',
      target: `${key.prefix}… ${name ?? ''}`.trim(),
    });
    return { key_id: key.id, api_key: plaintext };
  });
}

export interface ApiKeySummary {
  key_id: string;
  org_id: string;
  name: string | null;
  prefix: string;
  created_at: string;
  /** The person's e-mail (dashboard), "CLI", or "first start"; null for keys made before this was kept. */
  created_by: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
}

export async function listApiKeys(em: EntityManager, orgId?: string): Promise<ApiKeySummary[]> {
  const keys = await em.find(ApiKey, orgId ? { orgId } : {}, { orderBy: { createdAt: 'asc' } });
  return keys.map(toSummary);
}

function toSummary(k: ApiKey): ApiKeySummary {
  return {
    key_id: k.id,
    org_id: k.orgId,
    name: k.name ?? null,
    prefix: k.prefix,
    created_at: k.createdAt.toISOString(),
    created_by: k.createdBy ?? null,
    last_used_at: k.lastUsedAt?.toISOString() ?? null,
    revoked_at: k.revokedAt?.toISOString() ?? null,
  };
}

/**
 * Revokes a key: it answers 401 from the next request on, on every instance (keys are looked up on each
 * request, never cached). Returns undefined when no such key exists, or it belongs to another organization
 * than `acting.orgId`; revoking twice keeps the first revocation time.
 */
export async function revokeApiKey(
  em: EntityManager,
  keyId: string,
  acting: { actor: string; orgId?: string } = { actor: CLI_ACTOR },
): Promise<ApiKeySummary | undefined> {
  return transaction(em, async (tx) => {
    const key = await tx.findOne(ApiKey, { id: keyId });
    if (!key || (acting.orgId && key.orgId !== acting.orgId)) return undefined;
    if (!key.revokedAt) {
      key.revokedAt = new Date();
      await tx.flush();
      await recordAudit(tx, {
        orgId: key.orgId,
        actor: acting.actor,
        action: 'api_key.revoked',
        target: `${key.prefix}… ${key.name ?? ''}`.trim(),
      });
    }
    return toSummary(key);
  });
}

/** The active key with this plaintext, or undefined. The hash is compared in constant time. */
export async function findActiveKey(
  em: EntityManager,
  plaintext: string,
): Promise<{ id: string; orgId: string } | undefined> {
  if (!looksLikeApiKey(plaintext)) return undefined;
  const hash = hashApiKey(plaintext);
  const rows = await em
    .getConnection()
    .execute<{ id: string; org_id: string; key_hash: string }[]>(
      'select id, org_id, key_hash from api_keys where key_hash = ? and revoked_at is null',
      [hash],
    );
  const row = rows[0];
  if (!row) return undefined;
  if (!timingSafeEqual(Buffer.from(row.key_hash), Buffer.from(hash))) return undefined;
  return { id: row.id, orgId: row.org_id };
}
