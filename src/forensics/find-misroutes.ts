import type { Misroute, RoutingView, SpanRef, WorkRef } from './findings.js';
import { isConversation, routingAt, sameRouting } from './span-routing.js';
import { SpanTree } from './span-tree.js';
import { textAttribute, type StoredSpan, type StoredTrace } from './trace-model.js';
import type { TraceSource } from './trace-source.js';
import { workKind } from './work-kind.js';

export interface MisrouteFilter {
  /** Only misroutes whose origin or destination is this chat (an id as the spans carry it). */
  readonly chatId?: string;
  readonly threadId?: string;
}

const DELIVER = 'gateway.deliver';
const MISMATCH_EVENT = 'routing.mismatch';
const REFUSED = 'TL_MISROUTE_REFUSED';

/**
 * The deliveries among `traces` that went, or were about to go, to another conversation than
 * the work that produced them: flagged by the gateway's misroute guard (a routing.mismatch
 * event), or an `origin` delivery whose destination differs from the routing its trace began
 * with. For each, the first span where the routing changed and the work it came from (fetched
 * from `source` when the origin lies in another trace).
 */
export async function findMisroutes(traces: readonly StoredTrace[], source: Pick<TraceSource, 'get'>, filter: MisrouteFilter = {}): Promise<Misroute[]> {
  const found = new Map<string, Misroute>();
  const origins = new OriginTraces(source, traces);
  for (const trace of traces) {
    const tree = new SpanTree(trace);
    for (const span of trace.spans) {
      if (span.name !== DELIVER || found.has(span.spanId)) continue;
      const misroute = await misrouteOf(span, tree, origins);
      if (misroute === undefined) continue;
      if (filter.chatId !== undefined && !isConversation(misroute.origin, filter.chatId, filter.threadId) && !isConversation(misroute.destination, filter.chatId, filter.threadId)) continue;
      found.set(span.spanId, misroute);
    }
  }
  return [...found.values()].sort((a, b) => b.delivery.at - a.delivery.at);
}

async function misrouteOf(span: StoredSpan, tree: SpanTree, origins: OriginTraces): Promise<Misroute | undefined> {
  const chain = tree.chain(span);
  const event = span.events.find((e) => e.name === MISMATCH_EVENT);
  let origin: RoutingView | undefined;
  let destination: RoutingView | undefined;
  if (event !== undefined) {
    origin = routingAt(event.attributes, 'routing.origin.');
    destination = routingAt(event.attributes, 'routing.destination.');
  } else if (textAttribute(span, 'delivery.target') === 'origin') {
    // The guard compares with the routing captured by the work; this compares with the routing the trace began with.
    origin = chain.map(stampedRouting).find((routing) => routing !== undefined);
    destination = routingAt(span.attributes, 'routing.destination.');
    if (origin !== undefined && destination !== undefined && sameRouting(origin, destination)) return undefined;
  }
  if (origin === undefined || destination === undefined) return undefined;
  const diverged = chain.find((each) => {
    const routing = stampedRouting(each);
    return routing !== undefined && !sameRouting(routing, origin);
  });
  return {
    type: 'misroute',
    deliveryId: textAttribute(span, 'delivery.id') ?? '',
    deliveryKind: textAttribute(span, 'delivery.kind') ?? '',
    origin,
    destination,
    outcome: outcomeOf(span),
    delivery: spanRef(span),
    divergedAt: spanRef(diverged ?? span),
    ...(await workOf(span, tree, origins).then((work) => (work === undefined ? {} : { work }))),
    detectedBy: event === undefined ? 'trace' : 'guard',
  };
}

/** The routing a span was stamped with (chat.platform, chat.id, chat.thread.id). */
function stampedRouting(span: StoredSpan): RoutingView | undefined {
  return routingAt(span.attributes, 'chat.');
}

function outcomeOf(span: StoredSpan): Misroute['outcome'] {
  const exception = span.events.find((e) => e.name === 'exception');
  if (exception !== undefined) {
    const type = exception.attributes['exception.type'];
    return type === REFUSED || (span.statusMessage ?? '').includes(REFUSED) ? 'refused' : 'failed';
  }
  return span.attributes['delivery.queued'] === true ? 'queued' : 'sent';
}

export function spanRef(span: StoredSpan): SpanRef {
  const routing = stampedRouting(span);
  return { traceId: span.traceId, spanId: span.spanId, name: span.name, at: span.startMs, ...(routing === undefined ? {} : { routing }) };
}

/**
 * The root of the work that produced the delivery: of the span that captured its origin
 * (delivery.origin.trace_id and span_id), which lies in another trace when the delivery ran
 * in a stranger's context; else of the delivery's own trace.
 */
async function workOf(span: StoredSpan, tree: SpanTree, origins: OriginTraces): Promise<WorkRef | undefined> {
  const traceId = textAttribute(span, 'delivery.origin.trace_id');
  const spanId = textAttribute(span, 'delivery.origin.span_id');
  if (traceId !== undefined && spanId !== undefined && traceId !== span.traceId) {
    const originTree = await origins.tree(traceId);
    const capturing = originTree?.span(spanId);
    if (originTree !== undefined && capturing !== undefined) return workRef(originTree.root(capturing));
    // The origin trace is gone (retention, another window): name it, so the reader can look.
    return { traceId, spanId, name: '(origin trace not found)', at: span.startMs, kind: 'other' };
  }
  return workRef(tree.root(span));
}

function workRef(root: StoredSpan): WorkRef {
  return { ...spanRef(root), kind: workKind(root.name) };
}

/** Origin traces by id: those already read, else fetched once from the source. */
class OriginTraces {
  private readonly trees = new Map<string, Promise<SpanTree | undefined>>();

  constructor(
    private readonly source: Pick<TraceSource, 'get'>,
    traces: readonly StoredTrace[],
  ) {
    for (const trace of traces) this.trees.set(trace.traceId, Promise.resolve(new SpanTree(trace)));
  }

  tree(traceId: string): Promise<SpanTree | undefined> {
    let tree = this.trees.get(traceId);
    if (tree === undefined) {
      tree = this.source.get(traceId).then((trace) => (trace === undefined ? undefined : new SpanTree(trace)));
      this.trees.set(traceId, tree);
    }
    return tree;
  }
}
