import { DeliveryError } from '../errors.js';

/**
 * Turns an HTTP answer into success or a DeliveryError: network failures, 5xx and 429 are
 * worth retrying (honouring Retry-After), other 4xx are final.
 */
export async function checkDeliveryResponse(response: Response, what: string): Promise<void> {
  if (response.ok) {
    await response.body?.cancel();
    return;
  }
  const detail = (await response.text().catch(() => '')).slice(0, 300);
  const retryable = response.status >= 500 || response.status === 429;
  throw new DeliveryError(`${what} answered ${response.status}${detail ? `: ${detail}` : ''}`, {
    retryable,
    retryAfterMs: retryAfterMs(response.headers.get('retry-after')),
  });
}

/** A fetch that failed before any answer (refused, reset, timed out) is worth retrying. */
export function networkFailure(error: unknown, what: string): DeliveryError {
  if (error instanceof DeliveryError) return error;
  const reason = error instanceof Error ? error.message : String(error);
  return new DeliveryError(`${what} could not be reached: ${reason}`, { retryable: true, cause: error });
}

/** Retry-After as seconds or an HTTP date (RFC 9110 section 10.2.3), in milliseconds. */
export function retryAfterMs(header: string | null): number | undefined {
  if (header === null) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}
