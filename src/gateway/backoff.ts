export interface BackoffOptions {
  readonly baseMs: number;
  readonly maxMs: number;
}

/** The longest wait a platform can make us honour; a longer Retry-After is taken as this. */
export const MAX_RETRY_AFTER_MS = 24 * 3600_000;

/**
 * Exponential backoff with full jitter (a random wait up to base·2^attempt, capped), so
 * many deliveries failing together do not retry together. A platform's Retry-After wins
 * when it asks for longer.
 */
export function backoffMs(attempt: number, options: BackoffOptions, retryAfterMs?: number): number {
  const ceiling = Math.min(options.maxMs, options.baseMs * 2 ** Math.min(attempt, 30));
  const jittered = Math.random() * ceiling;
  return retryAfterMs === undefined ? jittered : Math.max(Math.min(retryAfterMs, MAX_RETRY_AFTER_MS), jittered);
}
