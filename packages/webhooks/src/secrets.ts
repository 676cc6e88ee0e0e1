import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/** 32 random bytes: Standard Webhooks asks for at least 24. */
const SECRET_BYTES = 32;
const SEALED = 'aes-256-gcm:';
const PLAIN = 'plain:';

/** A new signing secret in the Standard Webhooks form: `whsec_` + base64. */
export function generateSecret(): string {
  return `whsec_${randomBytes(SECRET_BYTES).toString('base64')}`;
}

/**
 * How a secret is stored. The signer needs the secret itself, so it cannot be a hash: with a key
 * configured it is sealed with AES-256-GCM, bound to its endpoint's id (a sealed secret copied onto
 * another endpoint does not open); without one it is stored as it is (see docs/api/webhooks.md, Secrets at rest).
 */
export function sealSecret(secret: string, endpointId: string, key: Buffer | undefined): string {
  if (!key) return `${PLAIN}${secret}`;
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(endpointId));
  const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return `${SEALED}${Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64')}`;
}

export class SecretUnavailableError extends Error {
  override name = 'SecretUnavailableError';
}

/** The secret back from its stored form; throws when it is sealed and the key is missing or another one. */
export function openSecret(stored: string, endpointId: string, key: Buffer | undefined): string {
  if (stored.startsWith(PLAIN)) return stored.slice(PLAIN.length);
  if (!stored.startsWith(SEALED))
    throw new SecretUnavailableError('the signing secret is stored in an unknown form');
  if (!key)
    throw new SecretUnavailableError(
      'the signing secret is encrypted and CRM_WEBHOOKS_ENCRYPTION_KEY is not set in this process',
    );
  const raw = Buffer.from(stored.slice(SEALED.length), 'base64');
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
    decipher.setAAD(Buffer.from(endpointId));
    decipher.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
  } catch {
    throw new SecretUnavailableError(
      'the signing secret cannot be decrypted: CRM_WEBHOOKS_ENCRYPTION_KEY is not the key it was sealed with',
    );
  }
}
