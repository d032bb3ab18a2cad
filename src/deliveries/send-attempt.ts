import type { Attributes, Span } from '@opentelemetry/api';
import { DeliveryError, networkFailure } from '../errors.js';
import type { Platform } from '../platforms/platform.js';
import { recordFailure } from '../session/index.js';
import { backoffMs, type BackoffOptions } from './backoff.js';
import { formatDestination, type Delivery } from '../session/delivery.js';

/** What decides, after a failed attempt, between a retry and giving up. */
export interface RetryPolicy {
  readonly maxAttempts: number;
  /** A delivery is given up this long after its series of attempts began, however few attempts it had. */
  readonly giveUpAfterMs: number;
  readonly backoff: BackoffOptions;
}

/** Why a delivery was given up, as its dead letter says. */
export type GiveUpReason = 'refused' | 'out of attempts' | 'past its give-up time';

/** After a failed attempt: send again at `dueAt`, or give up (`reason` is the dead letter's error). */
export type AfterFailure =
  | { readonly action: 'retry'; readonly attempt: number; readonly dueAt: number }
  | { readonly action: 'give up'; readonly attempt: number; readonly why: GiveUpReason; readonly reason: string };

/**
 * One attempt at sending `delivery` through its platform, inside `span`. Resolves undefined
 * when the platform accepted it, else the failure as a DeliveryError (recorded on the span).
 * Both outboxes send through here, so they classify failures alike.
 */
export async function sendAttempt(
  platforms: ReadonlyMap<string, Platform>,
  delivery: Delivery,
  span: Span,
  signal: AbortSignal,
): Promise<DeliveryError | undefined> {
  const platform = platforms.get(delivery.destination.platform);
  try {
    if (platform === undefined) {
      throw new DeliveryError(`No platform "${delivery.destination.platform}" is enabled`, { retryable: false });
    }
    await platform.send(
      {
        id: delivery.id,
        kind: delivery.kind,
        destination: delivery.destination,
        text: delivery.text,
        ...(delivery.inReplyTo === undefined ? {} : { inReplyTo: delivery.inReplyTo }),
        ...(delivery.attachment === undefined ? {} : { attachment: delivery.attachment }),
        ...(delivery.replaces === undefined ? {} : { replaces: delivery.replaces }),
        ...(delivery.button === undefined ? {} : { button: delivery.button }),
        traceId: delivery.origin.origin?.traceId ?? span.spanContext().traceId,
      },
      signal,
    );
    return undefined;
  } catch (thrown) {
    const error = networkFailure(thrown, delivery.destination.platform);
    recordFailure(span, error);
    return error;
  }
}

/** A failure that stop() cut off: not the platform's answer, so no attempt counts and the delivery is sent again. */
export function cutOffByStop(error: DeliveryError, signal: AbortSignal): boolean {
  return error.retryable && signal.aborted;
}

/** Backs off, or gives up: refused for good, out of attempts, or past the give-up time. */
export function afterFailure(delivery: Pick<Delivery, 'attempts' | 'attemptsSince'>, error: DeliveryError, policy: RetryPolicy, now = Date.now()): AfterFailure {
  const attempt = delivery.attempts + 1;
  const giveUpAt = delivery.attemptsSince + policy.giveUpAfterMs;
  if (error.retryable && attempt < policy.maxAttempts && now < giveUpAt) {
    // No attempt is planned past the give-up time: the last one is made at it.
    const dueAt = Math.min(now + Math.round(backoffMs(attempt, policy.backoff, error.retryAfterMs)), giveUpAt);
    return { action: 'retry', attempt, dueAt };
  }
  const why: GiveUpReason = !error.retryable ? 'refused' : attempt >= policy.maxAttempts ? 'out of attempts' : 'past its give-up time';
  return { action: 'give up', attempt, why, reason: `${error.message} (${why})` };
}

/**
 * What every gateway.deliver span says about its delivery: where it goes, and the routing of
 * the work that produced it (its origin), so a trace search alone finds where a delivery came
 * from beside where it went.
 */
export function deliveryAttributes(delivery: Pick<Delivery, 'id' | 'kind' | 'destination' | 'origin'>, attempt: number): Attributes {
  const { destination } = delivery;
  const origin = delivery.origin.session;
  const work = delivery.origin.origin;
  return {
    'messaging.system': destination.platform,
    'messaging.operation.type': 'send',
    'delivery.id': delivery.id,
    'delivery.kind': delivery.kind,
    'delivery.attempt': attempt,
    'delivery.destination': formatDestination(destination),
    'routing.destination.platform': destination.platform,
    'routing.destination.chat.id': destination.chatId,
    ...(destination.threadId === undefined ? {} : { 'routing.destination.chat.thread.id': destination.threadId }),
    'routing.origin.platform': origin.platform,
    'routing.origin.chat.id': origin.chatId,
    ...(origin.threadId === undefined ? {} : { 'routing.origin.chat.thread.id': origin.threadId }),
    ...(work === undefined ? {} : { 'delivery.origin.trace_id': work.traceId, 'delivery.origin.span_id': work.spanId }),
  };
}
