import { FORENSIC_ATTRIBUTES, FORENSIC_SPAN } from '../telemetry/forensic-names.js';
import { spanIdOrUndefined, traceIdOrUndefined } from './delivery-spans.js';
import type { SampledOut } from './findings.js';
import { textAttribute, type StoredSpan, type StoredTrace } from './trace-model.js';

/**
 * `traces` with each forensic copy (a `threadline.forensic` span, exported though its trace was
 * not sampled) read as the span it copies: under that span's name, in its own trace, so the
 * misroute and lost-work findings treat it as they treat the span in a fully kept trace.
 */
export function withForensicCopies(traces: readonly StoredTrace[]): StoredTrace[] {
  return traces.map((trace) => (trace.spans.some(isForensicCopy) ? { ...trace, spans: trace.spans.map(asCopiedSpan) } : trace));
}

export function isForensicCopy(span: StoredSpan): boolean {
  return span.name === FORENSIC_SPAN || span.attributes[FORENSIC_ATTRIBUTES.spanName] !== undefined;
}

/** The trace and span a forensic copy (already read as its span) stands for, or undefined for any other span. */
export function sampledOut(span: StoredSpan): SampledOut | undefined {
  const traceId = traceIdOrUndefined(span.attributes[FORENSIC_ATTRIBUTES.traceId]);
  const spanId = spanIdOrUndefined(span.attributes[FORENSIC_ATTRIBUTES.spanId]);
  return traceId === undefined || spanId === undefined ? undefined : { traceId, spanId };
}

function asCopiedSpan(span: StoredSpan): StoredSpan {
  if (span.name !== FORENSIC_SPAN) return span;
  const name = textAttribute(span, FORENSIC_ATTRIBUTES.spanName);
  return name === undefined || name === '' ? span : { ...span, name };
}
