import { isWorkRoot, spanIdOrUndefined, traceIdOrUndefined, wasRefusedMisroute, wasSent } from './delivery-spans.js';
import type { Misroute, RoutingView, SpanRef, WorkRef } from './findings.js';
import { sampledOut, withForensicCopies } from './forensic-spans.js';
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
/** The work of a delivery kept by a forensic copy: its trace, not sampled, holds nothing else. */
const NOT_SAMPLED = '(trace not sampled)';

/**
 * The deliveries among `traces` that went, or were about to go, to another conversation than
 * the work that produced them: flagged by the gateway's misroute guard (a routing.mismatch
 * event), or an `origin` delivery whose destination differs from the routing its work began
 * with. For each, the first span where the routing changed and the work it came from (fetched
 * from `source` when the origin lies in another trace). One finding per delivery id: a replayed
 * turn's span is the same delivery, and its outcome is what any of its spans achieved. A
 * forensic copy (its trace not sampled) is read as the gateway.deliver span it copies.
 */
export async function findMisroutes(read: readonly StoredTrace[], source: Pick<TraceSource, 'get'>, filter: MisrouteFilter = {}): Promise<Misroute[]> {
  const traces = withForensicCopies(read);
  const attempts = deliverSpansById(traces);
  const found = new Map<string, Misroute>();
  const origins = new OriginTraces(source, traces);
  for (const trace of traces) {
    const tree = new SpanTree(trace);
    for (const span of trace.spans) {
      if (span.name !== DELIVER) continue;
      const misroute = await misrouteOf(span, tree, origins, attempts);
      if (misroute === undefined) continue;
      if (filter.chatId !== undefined && !isConversation(misroute.origin, filter.chatId, filter.threadId) && !isConversation(misroute.destination, filter.chatId, filter.threadId)) continue;
      const key = misroute.deliveryId === '' ? span.spanId : misroute.deliveryId;
      const seen = found.get(key);
      // The first time the guard saw it; a replayed turn's flag repeats it.
      if (seen === undefined || misroute.delivery.at < seen.delivery.at) found.set(key, misroute);
    }
  }
  return [...found.values()].sort((a, b) => b.delivery.at - a.delivery.at);
}

async function misrouteOf(span: StoredSpan, tree: SpanTree, origins: OriginTraces, attempts: ReadonlyMap<string, StoredSpan[]>): Promise<Misroute | undefined> {
  const chain = workChain(tree.chain(span));
  const event = span.events.find((e) => e.name === MISMATCH_EVENT);
  let origin: RoutingView | undefined;
  let destination: RoutingView | undefined;
  if (event !== undefined) {
    origin = routingAt(event.attributes, 'routing.origin.');
    destination = routingAt(event.attributes, 'routing.destination.');
  } else if (textAttribute(span, 'delivery.target') === 'origin') {
    // The guard compares with the routing captured by the work; this compares with the routing the work began with.
    origin = chain.map(stampedRouting).find((routing) => routing !== undefined);
    destination = routingAt(span.attributes, 'routing.destination.');
    if (origin !== undefined && destination !== undefined && sameRouting(origin, destination)) return undefined;
  }
  if (origin === undefined || destination === undefined) return undefined;
  const workRouting = origin;
  const diverged = chain.find((each) => {
    const routing = stampedRouting(each);
    return routing !== undefined && !sameRouting(routing, workRouting);
  });
  const deliveryId = textAttribute(span, 'delivery.id') ?? '';
  const work = await workOf(span, chain, origins);
  const unsampled = sampledOut(span);
  return {
    type: 'misroute',
    deliveryId,
    deliveryKind: textAttribute(span, 'delivery.kind') ?? '',
    origin,
    destination,
    outcome: outcomeOf(span, attempts.get(deliveryId) ?? []),
    delivery: spanRef(span),
    divergedAt: spanRef(diverged ?? span),
    ...(work === undefined ? {} : { work }),
    detectedBy: event === undefined ? 'trace' : 'guard',
    ...(unsampled === undefined ? {} : { sampledOut: unsampled }),
  };
}

/**
 * The chain from the nearest work root down: a trace can hold several conversations' work when
 * one gateway's delivery reaches another (or the same) gateway with its traceparent.
 */
function workChain(chain: StoredSpan[]): StoredSpan[] {
  const root = chain.findLastIndex(isWorkRoot);
  return root <= 0 ? chain : chain.slice(root);
}

/** The gateway.deliver spans of each delivery id: the router's, the outbox's retries, replays. */
function deliverSpansById(traces: readonly StoredTrace[]): Map<string, StoredSpan[]> {
  const byId = new Map<string, StoredSpan[]>();
  for (const trace of traces) {
    for (const span of trace.spans) {
      const id = span.name === DELIVER ? textAttribute(span, 'delivery.id') : undefined;
      if (id === undefined) continue;
      let spans = byId.get(id);
      if (spans === undefined) byId.set(id, (spans = []));
      spans.push(span);
    }
  }
  return byId;
}

/** The routing a span was stamped with (chat.platform, chat.id, chat.thread.id). */
function stampedRouting(span: StoredSpan): RoutingView | undefined {
  return routingAt(span.attributes, 'chat.');
}

/** What became of the delivery: refused by strict routing, else sent by any of its spans, else as its own span says. */
function outcomeOf(span: StoredSpan, attempts: readonly StoredSpan[]): Misroute['outcome'] {
  if (wasRefusedMisroute(span)) return 'refused';
  if (wasSent(span) || attempts.some(wasSent)) return 'sent';
  return span.attributes['delivery.queued'] === true ? 'queued' : 'failed';
}

export function spanRef(span: StoredSpan): SpanRef {
  const routing = stampedRouting(span);
  return { traceId: span.traceId, spanId: span.spanId, name: span.name, at: span.startMs, ...(routing === undefined ? {} : { routing }) };
}

/**
 * The root of the work that produced the delivery: of the span that captured its origin
 * (delivery.origin.trace_id and span_id), which lies in another trace when the delivery ran
 * in a stranger's context; else the delivery's own work root.
 */
async function workOf(span: StoredSpan, chain: readonly StoredSpan[], origins: OriginTraces): Promise<WorkRef | undefined> {
  const traceId = traceIdOrUndefined(span.attributes['delivery.origin.trace_id']);
  const spanId = spanIdOrUndefined(span.attributes['delivery.origin.span_id']);
  const unsampled = sampledOut(span);
  if (traceId !== undefined && spanId !== undefined && traceId !== span.traceId) {
    const found = await origins.find(traceId, spanId);
    if (found !== undefined) return workRef(workChain(found.tree.chain(found.span))[0]!);
    // The origin trace is gone (not sampled, retention, another window): name it, so the reader can look.
    const name = traceId === unsampled?.traceId ? NOT_SAMPLED : '(origin trace not found)';
    return { traceId, spanId, name, at: span.startMs, kind: 'other' };
  }
  // A forensic copy stands alone: its work lies in the trace that was not sampled.
  if (unsampled !== undefined) return { ...unsampled, name: NOT_SAMPLED, at: span.startMs, kind: 'other' };
  return workRef(chain[0]!);
}

function workRef(root: StoredSpan): WorkRef {
  return { ...spanRef(root), kind: workKind(root.name) };
}

/** Origin spans by trace: in the traces already read, else fetched once from the source (the search window may have cut them). */
class OriginTraces {
  private readonly read = new Map<string, SpanTree>();
  private readonly fetched = new Map<string, Promise<SpanTree | undefined>>();

  constructor(
    private readonly source: Pick<TraceSource, 'get'>,
    traces: readonly StoredTrace[],
  ) {
    for (const trace of traces) this.read.set(trace.traceId, new SpanTree(trace));
  }

  async find(traceId: string, spanId: string): Promise<{ tree: SpanTree; span: StoredSpan } | undefined> {
    const read = this.read.get(traceId);
    const span = read?.span(spanId);
    if (read !== undefined && span !== undefined) return { tree: read, span };
    let fetched = this.fetched.get(traceId);
    if (fetched === undefined) {
      fetched = this.source.get(traceId).then((trace) => (trace === undefined ? undefined : new SpanTree(trace)));
      this.fetched.set(traceId, fetched);
    }
    const tree = await fetched;
    const capturing = tree?.span(spanId);
    return tree === undefined || capturing === undefined ? undefined : { tree, span: capturing };
  }
}
