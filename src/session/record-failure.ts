import { SpanStatusCode, type Span } from '@opentelemetry/api';
import { messageOf } from '../errors.js';

/** Marks `span` failed by `error`: the exception as an event, status ERROR with its message. */
export function recordFailure(span: Span, error: unknown): void {
  const message = messageOf(error);
  span.recordException(error instanceof Error ? error : message);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}
