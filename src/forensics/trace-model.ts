/**
 * Spans as the forensics commands read them back from a trace store (Jaeger, Tempo or the
 * local trace file): one shape for every source, times in milliseconds, ids in lowercase hex.
 */

export type SpanAttributeValue = string | number | boolean | readonly (string | number | boolean)[];

export type SpanAttributes = Readonly<Record<string, SpanAttributeValue>>;

export interface SpanEvent {
  readonly name: string;
  readonly timeMs: number;
  readonly attributes: SpanAttributes;
}

export interface SpanLink {
  readonly traceId: string;
  readonly spanId: string;
}

export interface StoredSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** Undefined for a trace's root span. */
  readonly parentSpanId?: string;
  readonly name: string;
  /** The resource's service.name, when the source says it. */
  readonly service?: string;
  readonly startMs: number;
  readonly endMs: number;
  readonly attributes: SpanAttributes;
  readonly events: readonly SpanEvent[];
  readonly links: readonly SpanLink[];
  readonly status: 'unset' | 'ok' | 'error';
  readonly statusMessage?: string;
}

/** The spans of one trace a source returned (not necessarily all of them: a trace may be cut by a time window). */
export interface StoredTrace {
  readonly traceId: string;
  readonly spans: readonly StoredSpan[];
}

/** Groups spans by trace, in order of first appearance. */
export function groupByTrace(spans: Iterable<StoredSpan>): StoredTrace[] {
  const traces = new Map<string, StoredSpan[]>();
  for (const span of spans) {
    let list = traces.get(span.traceId);
    if (list === undefined) traces.set(span.traceId, (list = []));
    list.push(span);
  }
  return [...traces].map(([traceId, list]) => ({ traceId, spans: list }));
}

/** A string attribute, or undefined when absent or of another type. */
export function textAttribute(span: { readonly attributes: SpanAttributes }, key: string): string | undefined {
  const value = span.attributes[key];
  return typeof value === 'string' ? value : undefined;
}
