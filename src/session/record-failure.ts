import { SpanStatusCode, type Span } from '@opentelemetry/api';

/** Marks `span` failed by `error`: the exception as an event, status ERROR with its message. */
export function recordFailure(span: Span, error: unknown): void {
  const message = error instanceof Error ? error.message : String(error);
  span.recordException(error instanceof Error ? error : message);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}
