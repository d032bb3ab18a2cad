export interface BackoffOptions {
  readonly baseMs: number;
  readonly maxMs: number;
  /** The longest Retry-After honoured; a longer one is taken as this, so one answer cannot hold a chat for a day. */
  readonly maxRetryAfterMs: number;
}

/**
 * Exponential backoff with full jitter (a random wait up to base·2^attempt, capped), so
 * many deliveries failing together do not retry together. A platform's Retry-After wins
 * when it asks for longer, up to its own cap.
 */
export function backoffMs(attempt: number, options: BackoffOptions, retryAfterMs?: number): number {
  const ceiling = Math.min(options.maxMs, options.baseMs * 2 ** Math.min(attempt, 30));
  const jittered = Math.random() * ceiling;
  return retryAfterMs === undefined ? jittered : Math.max(Math.min(retryAfterMs, options.maxRetryAfterMs), jittered);
}
