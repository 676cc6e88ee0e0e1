export {
  assertPublicTarget,
  hostOf,
  isPublicAddress,
  RefusedTargetError,
} from './address-policy.ts';
export { dispatchOutbox, type EventMatcher } from './dispatch.ts';
export { type ClaimedDelivery, type ClaimOptions, claimDue, recordOutcome } from './queue.ts';
export { type Pruned, pruneWebhookHistory } from './retention.ts';
export { retryDelayMs } from './schedule.ts';
export { generateSecret, openSecret, SecretUnavailableError, sealSecret } from './secrets.ts';
export { signedHeaders } from './signature.ts';
export { type AttemptOutcome, WebhookTransport } from './transport.ts';
export { leaseMsFor, MAX_IN_FLIGHT_PER_ENDPOINT, WebhookWorker, type WorkerLogger } from './worker.ts';
