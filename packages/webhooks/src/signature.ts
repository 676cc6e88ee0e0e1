import { Webhook } from 'standardwebhooks';

/**
 * The Standard Webhooks headers of one attempt, signed by the reference implementation:
 * `webhook-signature` is `v1,` + base64 HMAC-SHA256 of `id.timestamp.body` under the secret.
 * The id is the same on every attempt of a message; the timestamp is the attempt's own.
 */
export function signedHeaders(
  secret: string,
  messageId: string,
  body: string,
  at: Date,
): Record<string, string> {
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(messageId, at, body),
  };
}
