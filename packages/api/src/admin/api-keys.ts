import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { ApiKey, type EntityManager, LockMode, Organization, transaction } from '@crm/db';
import { LRUCache } from 'lru-cache';
import { ApiError } from '../errors.ts';
import { ALL_SCOPES, parseScopes } from '../scopes.ts';
import { CLI_ACTOR, recordAudit } from './audit.ts';

/** Keys look like `ck_` + 32 url-safe characters (192 random bits), matching the contract's `^[a-z]{2}_`. */
export const API_KEY_PREFIX = 'ck_';
const API_KEY_PATTERN = /^[a-z]{2}_[A-Za-z0-9_-]{32}$/;

/**
 * SHA-256 is enough for keys with 192 random bits (a slow password hash protects low-entropy secrets;
 * it would only slow every request down here), and it lets the lookup be one unique-index probe.
 */
export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
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
  scopes: string[];
  expires_at: string | null;
}

/** What a new key may do and until when (by default: everything, for good). */
export interface KeyGrant {
  name?: string;
  /** Scope names or `*` (see scopes.ts); already checked by the caller's schema or `parseScopes`. */
  scopes?: readonly string[];
  expiresAt?: Date | null;
}

/**
 * Creates a key and returns its plaintext, the only time it exists. The one way keys are made (CLI,
 * dashboard, first start, rotation); each is recorded in the organization's audit log under `actor`.
 */
export async function issueApiKey(
  em: EntityManager,
  orgId: string,
  grant: KeyGrant = {},
  acting: { actor: string } = { actor: CLI_ACTOR },
): Promise<IssuedKey> {
  let scopes: string[];
  try {
    scopes = parseScopes(grant.scopes ?? [ALL_SCOPES]);
  } catch (err) {
    throw new ApiError('invalid_request', `scopes: ${(err as Error).message}`);
  }
  if (grant.expiresAt && grant.expiresAt.getTime() <= Date.now())
    throw new ApiError(
      'invalid_request',
      `expires_at: must be in the future, got ${grant.expiresAt.toISOString()}`,
    );
  return transaction(em, async (tx) => {
    const org = await tx.findOne(Organization, { id: orgId });
    if (!org) throw new Error(`Organization ${orgId} does not exist`);
    const plaintext = generateApiKey();
    const key = tx.create(ApiKey, {
      orgId,
      name: grant.name ?? null,
      prefix: plaintext.slice(0, 7),
      keyHash: hashApiKey(plaintext),
      createdBy: acting.actor,
      scopes,
      expiresAt: grant.expiresAt ?? null,
    });
    await tx.flush();
    await recordAudit(tx, {
      orgId,
      actor: acting.actor,
      action: 'api_key.created',
      target: `${key.prefix}… ${grant.name ?? ''}`.trim(),
    });
    return issued(key, plaintext);
  });
}

const issued = (key: ApiKey, plaintext: string): IssuedKey => ({
  key_id: key.id,
  api_key: plaintext,
  scopes: key.scopes,
  expires_at: key.expiresAt?.toISOString() ?? null,
});

/**
 * Rotation: issues a successor with the same name, scopes and expiry (shown once), and lets the old key
 * work until `overlapMs` from now (or its own earlier expiry), so clients can switch over without an
 * outage. Undefined when no such unrevoked key exists (or it belongs to another organization than
 * `acting.orgId`).
 */
export async function rotateApiKey(
  em: EntityManager,
  keyId: string,
  overlapMs: number,
  acting: { actor: string; orgId?: string } = { actor: CLI_ACTOR },
): Promise<(IssuedKey & { replaces: string; old_key_expires_at: string }) | undefined> {
  try {
    return await transaction(em, async (tx) => {
      const old = await tx.findOne(ApiKey, { id: keyId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
      if (!old || old.revokedAt || (acting.orgId && old.orgId !== acting.orgId)) return undefined;
      const now = Date.now();
      // A successor that was revoked (leaked, say) replaces nothing: the old key may be rotated again.
      const successorLives =
        old.replacedBy != null && (await tx.findOne(ApiKey, { id: old.replacedBy }))?.revokedAt == null;
      if (successorLives)
        throw new ApiError(
          'invalid_request',
          `API key ${keyId} was already rotated: rotate its successor ${old.replacedBy} instead`,
        );
      if (old.expiresAt && old.expiresAt.getTime() <= now)
        throw new ApiError(
          'invalid_request',
          `API key ${keyId} expired at ${old.expiresAt.toISOString()}: issue a new one instead`,
        );
      const plaintext = generateApiKey();
      const successor = tx.create(ApiKey, {
        orgId: old.orgId,
        name: old.name ?? null,
        prefix: plaintext.slice(0, 7),
        keyHash: hashApiKey(plaintext),
        createdBy: acting.actor,
        scopes: old.scopes,
        expiresAt: old.expiresAt ?? null,
      });
      const overlapEnd = new Date(now + overlapMs);
      old.expiresAt = old.expiresAt && old.expiresAt < overlapEnd ? old.expiresAt : overlapEnd;
      old.replacedBy = successor.id;
      await tx.flush();
      await recordAudit(tx, {
        orgId: old.orgId,
        actor: acting.actor,
        action: 'api_key.rotated',
        target: `${old.prefix}… → ${successor.prefix}… ${old.name ?? ''}`.trim(),
      });
      return {
        ...issued(successor, plaintext),
        replaces: old.id,
        old_key_expires_at: old.expiresAt.toISOString(),
      };
    });
  } finally {
    // The old key's new expiry applies from the next request (also when the commit's answer was lost).
    forgetLookedUpKeys();
  }
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
  scopes: string[];
  expires_at: string | null;
  /** The key a rotation issued in its place. */
  replaced_by: string | null;
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
    scopes: k.scopes,
    expires_at: k.expiresAt?.toISOString() ?? null,
    replaced_by: k.replacedBy ?? null,
  };
}

/**
 * Revokes a key: it answers 401 from the next request on this process, within KEY_CACHE_TTL_MS on every
 * other instance. Returns undefined when no such key exists, or it belongs to another organization
 * than `acting.orgId`; revoking twice keeps the first revocation time.
 */
export async function revokeApiKey(
  em: EntityManager,
  keyId: string,
  acting: { actor: string; orgId?: string } = { actor: CLI_ACTOR },
): Promise<ApiKeySummary | undefined> {
  try {
    return await transaction(em, async (tx) => {
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
  } finally {
    forgetLookedUpKeys();
  }
}

/** An unrevoked key as authentication needs it. */
export interface ActiveKey {
  id: string;
  orgId: string;
  scopes: string[];
  expiresAt: Date | null;
}

/**
 * How long a process answers from a key it has looked up, instead of querying the database on every
 * request (docs/api/keys.md: Revocation and lookups). A revocation, rotation or organization deletion made by this process drops
 * its keys at once; one made elsewhere (another instance, a `crm` process of its own, SQL) is seen within
 * this time. Expiry is checked on every request against the cached expiry.
 */
export const KEY_CACHE_TTL_MS = 1_000;
const recentKeys = new LRUCache<string, ActiveKey>({ max: 10_000, ttl: KEY_CACHE_TTL_MS });
/**
 * The lookups under way, by hash: the requests that arrive with a key while its entry has lapsed share
 * one query instead of sending one each (fifty connections on one key sent up to fifty a second).
 */
const lookups = new Map<string, Promise<ActiveKey | undefined>>();
/** Moves on each forgetting: a lookup that began before one does not remember what it read. */
let generation = 0;

/**
 * Drops the looked-up keys (all of them: revocations and deletions are rare, a lookup is cheap), and the
 * lookups under way, which a request arriving from now on does not join. Called once the change has
 * committed, so no lookup can read the key as it was and remember or share it afterwards.
 */
export function forgetLookedUpKeys(): void {
  generation++;
  recentKeys.clear();
  lookups.clear();
}

/**
 * The unrevoked key with this plaintext, or undefined: from the keys this process looked up within
 * KEY_CACHE_TTL_MS, else from the database (the hash compared in constant time; one query for all the
 * requests that ask at once). Unknown keys are never remembered, so a new key works at once and guessing
 * costs what it did.
 */
export async function findActiveKey(em: EntityManager, plaintext: string): Promise<ActiveKey | undefined> {
  if (!looksLikeApiKey(plaintext)) return undefined;
  const hash = hashApiKey(plaintext);
  const cached = recentKeys.get(hash);
  if (cached) return cached;
  const underWay = lookups.get(hash);
  if (underWay) return underWay;
  const lookup = lookUpKey(em, hash).finally(() => {
    if (lookups.get(hash) === lookup) lookups.delete(hash);
  });
  lookups.set(hash, lookup);
  return lookup;
}

async function lookUpKey(em: EntityManager, hash: string): Promise<ActiveKey | undefined> {
  const startedAt = generation;
  const rows = await em
    .getConnection()
    .execute<
      { id: string; org_id: string; key_hash: string; scopes: string[]; expires_at: Date | string | null }[]
    >(
      'select id, org_id, key_hash, scopes, expires_at from api_keys where key_hash = ? and revoked_at is null',
      [hash],
    );
  const row = rows[0];
  if (!row) return undefined;
  if (!timingSafeEqual(Buffer.from(row.key_hash), Buffer.from(hash))) return undefined;
  const key: ActiveKey = {
    id: row.id,
    orgId: row.org_id,
    scopes: row.scopes,
    expiresAt: row.expires_at === null ? null : new Date(row.expires_at),
  };
  // Not remembered when this process revoked or deleted something while the query ran.
  if (generation === startedAt) recentKeys.set(hash, key);
  return key;
}
