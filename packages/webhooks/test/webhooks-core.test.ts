import { createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  generateSecret,
  isPublicAddress,
  openSecret,
  retryDelayMs,
  SecretUnavailableError,
  sealSecret,
  signedHeaders,
} from '../src/index.ts';

describe('the address policy', () => {
  it.each([
    '127.0.0.1',
    '127.255.0.9',
    '10.0.0.1',
    '172.16.5.4',
    '192.168.1.1',
    '169.254.169.254',
    '100.100.100.200',
    '0.0.0.0',
    '255.255.255.255',
    '224.0.0.1',
    '192.0.2.10',
    '::',
    '::1',
    'fe80::1',
    'fd00:ec2::254',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    '64:ff9b::a00:1',
    '2002:7f00:1::',
    'not an address',
  ])('refuses %s', (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each(['8.8.8.8', '93.184.215.14', '::ffff:8.8.8.8', '2606:4700:4700::1111'])('allows %s', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });
});

describe('the retry schedule', () => {
  const schedule = [1_000, 60_000, 3_600_000];

  it('waits each scheduled delay give or take 20%, then gives up', () => {
    expect(retryDelayMs(schedule, 1, null, () => 0)).toBe(800);
    expect(retryDelayMs(schedule, 1, null, () => 1)).toBe(1_200);
    expect(retryDelayMs(schedule, 2, null, () => 0.5)).toBe(60_000);
    expect(retryDelayMs(schedule, 3, null, () => 0.5)).toBe(3_600_000);
    expect(retryDelayMs(schedule, 4)).toBeUndefined();
  });

  it('honours a longer Retry-After, up to a day', () => {
    expect(retryDelayMs(schedule, 1, 30_000, () => 0.5)).toBe(30_000);
    expect(retryDelayMs(schedule, 2, 1_000, () => 0.5)).toBe(60_000);
    expect(retryDelayMs(schedule, 1, 10 * 86_400_000, () => 0.5)).toBe(86_400_000);
  });

  it('the default spans about a day', async () => {
    const { loadConfig } = await import('@crm/config');
    const total = loadConfig({}).webhooks.retryScheduleMs.reduce((a, b) => a + b, 0);
    expect(total / 3_600_000).toBeGreaterThan(20);
    expect(total / 3_600_000).toBeLessThan(30);
  });
});

describe('signing secrets', () => {
  const key = randomBytes(32);

  it('are whsec_ and base64 of 32 random bytes', () => {
    const secret = generateSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(generateSecret()).not.toBe(secret);
  });

  it('are sealed with the key, bound to their endpoint, and open only with both', () => {
    const secret = generateSecret();
    const sealed = sealSecret(secret, 'endpoint-1', key);
    expect(sealed).toMatch(/^aes-256-gcm:/);
    expect(sealed).not.toContain(secret.slice(6));
    expect(openSecret(sealed, 'endpoint-1', key)).toBe(secret);
    expect(() => openSecret(sealed, 'endpoint-2', key)).toThrow(SecretUnavailableError);
    expect(() => openSecret(sealed, 'endpoint-1', randomBytes(32))).toThrow(/not the key/);
    expect(() => openSecret(sealed, 'endpoint-1', undefined)).toThrow(/CRM_WEBHOOKS_ENCRYPTION_KEY/);
  });

  it('are stored as they are without a key', () => {
    const secret = generateSecret();
    expect(sealSecret(secret, 'e', undefined)).toBe(`plain:${secret}`);
    expect(openSecret(`plain:${secret}`, 'e', undefined)).toBe(secret);
  });
});

describe('signatures', () => {
  it('are v1, base64 HMAC-SHA256 of id.timestamp.body under the decoded secret', () => {
    const secret = generateSecret();
    const at = new Date('2026-11-23T10:00:00.900Z');
    const body = '{"type":"deal.created","timestamp":"2026-11-23T10:00:00.000Z","data":{"id":"x"}}';
    const headers = signedHeaders(secret, 'evt-1', body, at);
    const expected = createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64'))
      .update(`evt-1.1795428000.${body}`)
      .digest('base64');
    expect(headers).toEqual({
      'webhook-id': 'evt-1',
      'webhook-timestamp': '1795428000',
      'webhook-signature': `v1,${expected}`,
    });
  });
});
