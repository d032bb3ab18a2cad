import { SpanKind, TraceFlags, type Attributes, type SpanContext } from '@opentelemetry/api';
import { RandomIdGenerator, type IdGenerator, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { FORENSIC_ATTRIBUTES, FORENSIC_SPAN, SAMPLED_OUT_LINK, type ForensicReason } from './forensic-names.js';

const ids: IdGenerator = new RandomIdGenerator();

/**
 * A copy of `span` (recorded, not sampled, already ended and redacted) as the root of a trace
 * of its own, sampled, linked to the original: same times, attributes, events and status, so
 * it reads as the original did, plus the FORENSIC_ATTRIBUTES.
 */
export function forensicCopy(span: ReadableSpan, reason: ForensicReason): ReadableSpan {
  const original = span.spanContext();
  const context: SpanContext = { traceId: ids.generateTraceId(), spanId: ids.generateSpanId(), traceFlags: TraceFlags.SAMPLED };
  const attributes: Attributes = {
    ...span.attributes,
    [FORENSIC_ATTRIBUTES.reason]: reason,
    [FORENSIC_ATTRIBUTES.spanName]: span.name,
    [FORENSIC_ATTRIBUTES.traceId]: original.traceId,
    [FORENSIC_ATTRIBUTES.spanId]: original.spanId,
  };
  return {
    name: FORENSIC_SPAN,
    kind: SpanKind.INTERNAL,
    spanContext: () => context,
    startTime: span.startTime,
    endTime: span.endTime,
    duration: span.duration,
    status: span.status,
    attributes,
    links: [{ context: original, attributes: { 'threadline.link': SAMPLED_OUT_LINK } }, ...span.links],
    events: span.events,
    ended: true,
    resource: span.resource,
    instrumentationScope: span.instrumentationScope,
    droppedAttributesCount: span.droppedAttributesCount,
    droppedEventsCount: span.droppedEventsCount,
    droppedLinksCount: span.droppedLinksCount,
  };
}
