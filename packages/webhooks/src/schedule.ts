/** Each retry waits its scheduled delay, give or take this fraction, so failed receivers are not hit in step. */
export const JITTER = 0.2;
/** A receiver's Retry-After is honoured up to this long. */
const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

/**
 * How long to wait before retrying after `failedAttempts` attempts of a delivery, or undefined when the
 * schedule is used up. The schedule lists the delay before each retry; a longer Retry-After wins.
 */
export function retryDelayMs(
  schedule: readonly number[],
  failedAttempts: number,
  retryAfterMs: number | null = null,
  random: () => number = Math.random,
): number | undefined {
  const planned = schedule[failedAttempts - 1];
  if (planned === undefined) return undefined;
  const jittered = Math.round(planned * (1 - JITTER + 2 * JITTER * random()));
  return Math.max(jittered, Math.min(retryAfterMs ?? 0, MAX_RETRY_AFTER_MS));
}
