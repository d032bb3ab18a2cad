import { HTTPError, MatrixError } from 'matrix-js-sdk/lib/http-api/index.js';
import { DeliveryError, messageOf } from '../../errors.js';

/**
 * The wait a homeserver asked for: the Retry-After header, else M_LIMIT_EXCEEDED's
 * retry_after_ms (as the SDK reads them); undefined when it named none or an unusable one.
 */
export function retryAfterMsOf(error: unknown): number | undefined {
  if (!(error instanceof HTTPError) || !error.isRateLimitError()) return undefined;
  try {
    const ms = error.getRetryAfterMs();
    return ms === null || !Number.isFinite(ms) || ms < 0 ? undefined : ms;
  } catch {
    return undefined;
  }
}

/** The HTTP status of a homeserver's error answer; undefined when no answer came. */
export function statusOf(error: unknown): number | undefined {
  return error instanceof HTTPError ? error.httpStatus : undefined;
}

/**
 * A failed client-server call as a delivery outcome: 429 (M_LIMIT_EXCEEDED, with its wait),
 * 5xx and no answer at all are retried; other refusals are final. The message names the
 * status and errcode only: the SDK's own names the URL, whose room id is a chat id that the
 * log privacy setting may keep out, so it is not kept as the cause either.
 */
export function matrixDeliveryError(error: unknown, what: string): DeliveryError {
  if (error instanceof DeliveryError) return error;
  const status = statusOf(error);
  if (status !== undefined) {
    const errcode = error instanceof MatrixError && typeof error.errcode === 'string' ? ` ${error.errcode}` : '';
    const limited = (error as HTTPError).isRateLimitError();
    return new DeliveryError(`Matrix ${limited || status >= 500 ? 'failed' : 'refused'} ${what}: ${status}${errcode}`, {
      retryable: limited || status >= 500,
      retryAfterMs: retryAfterMsOf(error),
    });
  }
  return new DeliveryError(`Matrix could not be reached for ${what}: ${messageOf(error)}`, { retryable: true });
}
