import { SpanStatusCode, type AttributeValue } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { ForensicReason } from './forensic-names.js';

const MISMATCH_EVENT = 'routing.mismatch';

/**
 * Why an ended span of a delivery must be kept though its trace was not sampled, or undefined:
 * `misroute` when the misroute guard flagged it or an origin delivery went elsewhere than the
 * routing it was stamped with; `failed` when it ended in error (an attempt refused or failed,
 * a given-up delivery, background work that never recorded its notification); `retry` for
 * any later attempt, so a kept failure is followed by what became of it. Only spans that name
 * a delivery (delivery.id) count.
 */
export function forensicReason(span: ReadableSpan): ForensicReason | undefined {
  const { attributes } = span;
  if (attributes['delivery.id'] === undefined) return undefined;
  if (span.events.some((event) => event.name === MISMATCH_EVENT) || wentElsewhere(span)) return 'misroute';
  if (span.status.code === SpanStatusCode.ERROR || span.events.some((event) => event.name === 'exception')) return 'failed';
  const attempt = attributes['delivery.attempt'];
  return typeof attempt === 'number' && attempt > 1 ? 'retry' : undefined;
}

/** An origin delivery whose destination is not the conversation its span was stamped with. */
function wentElsewhere({ attributes }: ReadableSpan): boolean {
  if (attributes['delivery.target'] !== 'origin' || attributes['chat.platform'] === undefined) return false;
  const same = (stamped: AttributeValue | undefined, destination: AttributeValue | undefined) => (stamped ?? '') === (destination ?? '');
  return !(
    same(attributes['chat.platform'], attributes['routing.destination.platform']) &&
    same(attributes['chat.id'], attributes['routing.destination.chat.id']) &&
    same(attributes['chat.thread.id'], attributes['routing.destination.chat.thread.id'])
  );
}
