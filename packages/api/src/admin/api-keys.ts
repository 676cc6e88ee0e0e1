import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { ApiKey, type EntityManager, transaction } from '@crm/db';
import { LRUCache } from 'lru-cache';
import { ApiError } from '../errors.ts';
import { currentOrg, orgDb, unscopedDb } from '../org-scope.ts';
import { ALL_SCOPES, parseScopes } from '../scopes.ts';
import { CLI_ACTOR, recordAudit } from './audit.ts';
import { organizationExists } from './organizations.ts';

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
    if (!(await organizationExists(tx, orgId))) throw new Error(`Organization ${orgId} does not exist`);
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

const issued = (key: Pick<ApiKey, 'id' | 'scopes' | 'expiresAt'>, plaintext: string): IssuedKey => ({
  key_id: key.id,
  api_key: plaintext,
  scopes: key.scopes,
  expires_at: key.expiresAt?.toISOString() ?? null,
});

/** A key's row as the summaries and rotation read it. */
const KEY_COLUMNS = [
  'id',
  'org_id',
  'name',
  'prefix',
  'created_at',
  'created_by',
  'last_used_at',
  'revoked_at',
  'scopes',
  'expires_at',
  'replaced_by',
] as const;

/** The organization's key `keyId`, locked for the rest of the transaction (undefined: none such). */
const lockedKey = (keys: ReturnType<typeof orgDb>, keyId: string) =>
  keys.selectFrom('api_keys').select(KEY_COLUMNS).where('id', '=', keyId).forUpdate().executeTakeFirst();

/**
 * Rotation: issues a successor with the same name, scopes and expiry (shown once), and lets the old key
 * work until `overlapMs` from now (or its own earlier expiry), so clients can switch over without an
 * outage. Undefined when the organization `em` is scoped to has no such unrevoked key.
 */
export async function rotateApiKey(
  em: EntityManager,
  keyId: string,
  overlapMs: number,
  acting: { actor: string } = { actor: CLI_ACTOR },
): Promise<(IssuedKey & { replaces: string; old_key_expires_at: string }) | undefined> {
  try {
    return await transaction(em, async (tx) => {
      const keys = orgDb(tx);
      const old = await lockedKey(keys, keyId);
      if (!old || old.revoked_at) return undefined;
      const now = Date.now();
      // A successor that was revoked (leaked, say) replaces nothing: the old key may be rotated again.
      const successorLives =
        old.replaced_by != null &&
        (
          await keys
            .selectFrom('api_keys')
            .select('revoked_at')
            .where('id', '=', old.replaced_by)
            .executeTakeFirst()
        )?.revoked_at == null;
      if (successorLives)
        throw new ApiError(
          'invalid_request',
          `API key ${keyId} was already rotated: rotate its successor ${old.replaced_by} instead`,
        );
      const oldExpiresAt = old.expires_at == null ? null : new Date(old.expires_at);
      if (oldExpiresAt && oldExpiresAt.getTime() <= now)
        throw new ApiError(
          'invalid_request',
          `API key ${keyId} expired at ${oldExpiresAt.toISOString()}: issue a new one instead`,
        );
      const plaintext = generateApiKey();
      const successor = tx.create(ApiKey, {
        orgId: currentOrg(tx),
        name: old.name ?? null,
        prefix: plaintext.slice(0, 7),
        keyHash: hashApiKey(plaintext),
        createdBy: acting.actor,
        scopes: old.scopes,
        expiresAt: oldExpiresAt,
      });
      await tx.flush();
      const overlapEnd = new Date(now + overlapMs);
      const oldKeyExpiresAt = oldExpiresAt && oldExpiresAt < overlapEnd ? oldExpiresAt : overlapEnd;
      await keys
        .updateTable('api_keys')
        .set({ expires_at: oldKeyExpiresAt, replaced_by: successor.id })
        .where('id', '=', keyId)
        .execute();
      await recordAudit(tx, {
        orgId: currentOrg(tx),
        actor: acting.actor,
        action: 'api_key.rotated',
        target: `${old.prefix}… → ${successor.prefix}… ${old.name ?? ''}`.trim(),
      });
      return {
        ...issued(successor, plaintext),
        replaces: old.id,
        old_key_expires_at: oldKeyExpiresAt.toISOString(),
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

/** The keys of the organization `em` is scoped to, oldest first. */
export function listApiKeys(em: EntityManager): Promise<ApiKeySummary[]> {
  return keysIn(orgDb(em));
}

/** Every organization's keys, oldest first (`crm key list` without `--org`). */
export function listEveryApiKey(em: EntityManager): Promise<ApiKeySummary[]> {
  return keysIn(unscopedDb(em, 'crm key list without --org: every organization’s keys'));
}

/** The keys `db` sees, oldest first. */
async function keysIn(db: ReturnType<typeof orgDb>): Promise<ApiKeySummary[]> {
  const keys = await db
    .selectFrom('api_keys')
    .select(KEY_COLUMNS)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return keys.map(toSummary);
}

type KeyRow = {
  id: string;
  org_id: string;
  name: string | null;
  prefix: string;
  created_at: Date | string;
  created_by: string | null;
  last_used_at: Date | string | null;
  revoked_at: Date | string | null;
  scopes: string[];
  expires_at: Date | string | null;
  replaced_by: string | null;
};

/** The connection hands timestamps back as strings or Dates, by driver: ISO strings out, as before. */
const isoOrNull = (at: Date | string | null) => (at == null ? null : new Date(at).toISOString());

function toSummary(k: KeyRow): ApiKeySummary {
  return {
    key_id: k.id,
    org_id: k.org_id,
    name: k.name ?? null,
    prefix: k.prefix,
    created_at: new Date(k.created_at).toISOString(),
    created_by: k.created_by ?? null,
    last_used_at: isoOrNull(k.last_used_at),
    revoked_at: isoOrNull(k.revoked_at),
    scopes: k.scopes,
    expires_at: isoOrNull(k.expires_at),
    replaced_by: k.replaced_by ?? null,
  };
}

/**
 * Revokes a key of the organization `em` is scoped to: it answers 401 from the next request on this
 * process, within KEY_CACHE_TTL_MS on every other instance. Undefined when the organization has no such
 * key; revoking twice keeps the first revocation time.
 */
export async function revokeApiKey(
  em: EntityManager,
  keyId: string,
  acting: { actor: string } = { actor: CLI_ACTOR },
): Promise<ApiKeySummary | undefined> {
  try {
    return await transaction(em, async (tx) => {
      const keys = orgDb(tx);
      const key = await lockedKey(keys, keyId);
      if (!key) return undefined;
      if (key.revoked_at) return toSummary(key);
      const revokedAt = new Date();
      await keys.updateTable('api_keys').set({ revoked_at: revokedAt }).where('id', '=', keyId).execute();
      await recordAudit(tx, {
        orgId: currentOrg(tx),
        actor: acting.actor,
        action: 'api_key.revoked',
        target: `${key.prefix}… ${key.name ?? ''}`.trim(),
      });
      return toSummary({ ...key, revoked_at: revokedAt });
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
  const row = await unscopedDb(
    em,
    'authentication: a key is found by its hash, before its organization is known',
  )
    .selectFrom('api_keys')
    .select(['id', 'org_id', 'key_hash', 'scopes', 'expires_at'])
    .where('key_hash', '=', hash)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
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
