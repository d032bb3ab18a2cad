import type { RoutingView, SpanRef } from './findings.js';
import { spanRef } from './find-misroutes.js';
import { withForensicCopies } from './forensic-spans.js';
import { routingAt } from './span-routing.js';
import { SpanTree } from './span-tree.js';
import { textAttribute, type SpanLink, type StoredSpan, type StoredTrace } from './trace-model.js';
import { workKind } from './work-kind.js';
import type { WorkKind } from './findings.js';

/** One delivery of a conversation's trace, as its gateway.deliver span tells it. */
export interface DeliverySummary {
  readonly id: string;
  readonly kind: string;
  /** origin, home or explicit; undefined on an outbox retry's span. */
  readonly target?: string;
  readonly attempt?: number;
  readonly destination?: RoutingView;
  readonly origin?: RoutingView;
  readonly outcome: 'sent' | 'failed' | 'queued' | 'replayed';
  readonly error?: string;
  /** The gateway's misroute guard flagged it. */
  readonly mismatch: boolean;
  readonly span: SpanRef;
}

/** One trace of a conversation: its root, its deliveries, the traces it links to. */
export interface TraceSummary {
  readonly traceId: string;
  readonly root: SpanRef & { readonly kind: WorkKind; readonly durationMs: number; readonly status: StoredSpan['status']; readonly statusMessage?: string };
  readonly spanCount: number;
  readonly deliveries: readonly DeliverySummary[];
  /** Span links of the root: the origin of resumed work. */
  readonly links: readonly SpanLink[];
}

/** Summaries of traces, newest first; a forensic copy (its trace not sampled) reads as the span it copies. */
export function summarizeTraces(traces: readonly StoredTrace[]): TraceSummary[] {
  return withForensicCopies(traces)
    .filter((trace) => trace.spans.length > 0)
    .map(summarize)
    .sort((a, b) => b.root.at - a.root.at);
}

function summarize(trace: StoredTrace): TraceSummary {
  const tree = new SpanTree(trace);
  // A cycle in malformed data leaves no root: the earliest span stands in.
  const root = tree.roots()[0] ?? [...trace.spans].sort((a, b) => a.startMs - b.startMs)[0]!;
  return {
    traceId: trace.traceId,
    root: {
      ...spanRef(root),
      kind: workKind(root.name),
      durationMs: root.endMs - root.startMs,
      status: root.status,
      ...(root.statusMessage === undefined || root.statusMessage === '' ? {} : { statusMessage: root.statusMessage }),
    },
    spanCount: trace.spans.length,
    deliveries: trace.spans
      .filter((span) => span.name === 'gateway.deliver')
      .sort((a, b) => a.startMs - b.startMs)
      .map(deliverySummary),
    links: root.links,
  };
}

function deliverySummary(span: StoredSpan): DeliverySummary {
  const target = textAttribute(span, 'delivery.target');
  const attempt = span.attributes['delivery.attempt'];
  const destination = routingAt(span.attributes, 'routing.destination.');
  const origin = routingAt(span.attributes, 'routing.origin.');
  const failed = span.events.some((event) => event.name === 'exception');
  const outcome: DeliverySummary['outcome'] = failed
    ? 'failed'
    : span.attributes['delivery.replayed'] === true
      ? 'replayed'
      : span.attributes['delivery.queued'] === true
        ? 'queued'
        : 'sent';
  return {
    id: textAttribute(span, 'delivery.id') ?? '',
    kind: textAttribute(span, 'delivery.kind') ?? '',
    ...(target === undefined ? {} : { target }),
    ...(typeof attempt === 'number' ? { attempt } : {}),
    ...(destination === undefined ? {} : { destination }),
    ...(origin === undefined ? {} : { origin }),
    outcome,
    ...(failed && span.statusMessage !== undefined ? { error: span.statusMessage } : {}),
    mismatch: span.events.some((event) => event.name === 'routing.mismatch'),
    span: spanRef(span),
  };
}
