import type { StoredSpan } from './trace-model.js';
import { workKind } from './work-kind.js';

/** A gateway.deliver span that was an attempt to send: not merely queued, not a replayed turn's. */
export function wasAttempt(span: StoredSpan): boolean {
  return span.attributes['delivery.queued'] !== true && span.attributes['delivery.replayed'] !== true;
}

/** A gateway.deliver span that handed the delivery to its platform: an attempt without an exception. */
export function wasSent(span: StoredSpan): boolean {
  return wasAttempt(span) && !span.events.some((event) => event.name === 'exception');
}

/** A delivery strict routing refused: nothing was recorded, nothing will be sent. */
export function wasRefusedMisroute(span: StoredSpan): boolean {
  return span.events.some((event) => event.name === 'exception' && event.attributes['exception.type'] === 'TL_MISROUTE_REFUSED');
}

/** The root of the work a span belongs to: a message's turn, a cron run, a watcher's report. */
export function isWorkRoot(span: StoredSpan): boolean {
  const kind = workKind(span.name);
  return kind === 'turn' || kind === 'watcher' || kind === 'cron run';
}

const TRACE_ID = /^[0-9a-f]{32}$/;
const SPAN_ID = /^[0-9a-f]{16}$/;

/** An id from an attribute, kept only when it is one: attribute text is not to be trusted or printed as is. */
export function traceIdOrUndefined(value: unknown): string | undefined {
  return typeof value === 'string' && TRACE_ID.test(value) ? value : undefined;
}

export function spanIdOrUndefined(value: unknown): string | undefined {
  return typeof value === 'string' && SPAN_ID.test(value) ? value : undefined;
}
