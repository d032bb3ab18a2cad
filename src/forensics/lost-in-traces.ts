import type { DeliveryKind } from '../session/delivery.js';
import { lostWhat, type LostWork } from './findings.js';
import { isConversation, routingAt } from './span-routing.js';
import { traceIdOrUndefined, wasAttempt, wasRefusedMisroute, wasSent } from './delivery-spans.js';
import { isForensicCopy, sampledOut, withForensicCopies } from './forensic-spans.js';
import { textAttribute, type StoredSpan, type StoredTrace } from './trace-model.js';

export interface LostInTracesOptions {
  /** ms since the epoch. */
  readonly now: number;
  /** A delivery not sent this long after its first span counts as lost. */
  readonly lostAfterMs: number;
  readonly chatId?: string;
  readonly threadId?: string;
}

const KINDS: ReadonlySet<string> = new Set(['reply', 'notification', 'cron', 'send']);

/**
 * Deliveries the traces show begun and never sent: every span of the delivery id (the
 * router's, the outbox's retries, the root of the background work that asked for it) failed,
 * was only queued, or never reached the outbox, and the first is older than lostAfterMs. A
 * refused misroute is a misroute, not lost. Judged from the traces given: a send whose span
 * fell outside them is not seen. Forensic copies (their traces not sampled) are read as the
 * spans they copy; a delivery known from copies alone is judged only when one shows a failure,
 * since its unremarkable spans (a first attempt that went through) were not kept.
 */
export function findLostInTraces(read: readonly StoredTrace[], options: LostInTracesOptions): LostWork[] {
  const traces = withForensicCopies(read);
  const byDelivery = new Map<string, StoredSpan[]>();
  for (const trace of traces) {
    for (const span of trace.spans) {
      const id = textAttribute(span, 'delivery.id');
      if (id === undefined) continue;
      let spans = byDelivery.get(id);
      if (spans === undefined) byDelivery.set(id, (spans = []));
      spans.push(span);
    }
  }
  const lost: LostWork[] = [];
  for (const [id, spans] of byDelivery) {
    const finding = lostDelivery(id, spans, options);
    if (finding !== undefined) lost.push(finding);
  }
  return lost.sort((a, b) => b.dueAt - a.dueAt);
}

function lostDelivery(id: string, spans: StoredSpan[], options: LostInTracesOptions): LostWork | undefined {
  if (spans.every(isForensicCopy) && !spans.some(hasFailure)) return undefined;
  const delivers = spans.filter((span) => span.name === 'gateway.deliver');
  if (delivers.some(wasSent) || delivers.some(wasRefusedMisroute)) return undefined;
  // Only seen again by a replayed turn: the outbox had it already, its fate lies outside these traces.
  if (delivers.length > 0 && delivers.every((span) => span.attributes['delivery.replayed'] === true)) return undefined;
  const first = spans.reduce((a, b) => (b.startMs < a.startMs ? b : a));
  if (options.now - first.startMs <= options.lostAfterMs) return undefined;
  const last = [...spans].sort((a, b) => a.startMs - b.startMs).findLast((span) => span.status === 'error');
  const router = delivers.find((span) => textAttribute(span, 'delivery.target') !== undefined) ?? delivers[0];
  const destination = router === undefined ? undefined : routingAt(router.attributes, 'routing.destination.');
  const origin = router === undefined ? routingAt(first.attributes, 'chat.') : routingAt(router.attributes, 'routing.origin.');
  if (options.chatId !== undefined && !isConversation(origin, options.chatId, options.threadId) && !isConversation(destination, options.chatId, options.threadId)) {
    return undefined;
  }
  const kind = textAttribute(first, 'delivery.kind');
  const unsampled = (last === undefined ? undefined : sampledOut(last)) ?? spans.map(sampledOut).find((ids) => ids !== undefined);
  const originTraceId = router === undefined ? first.traceId : (traceIdOrUndefined(router.attributes['delivery.origin.trace_id']) ?? router.traceId);
  return {
    type: 'lost',
    what: lostWhat(kind),
    id,
    ...(kind !== undefined && KINDS.has(kind) ? { kind: kind as DeliveryKind } : {}),
    state: delivers.length === 0 ? 'not recorded' : delivers.every((span) => span.attributes['delivery.queued'] === true) ? 'queued, never sent' : 'not sent',
    dueAt: first.startMs,
    ...(destination === undefined ? {} : { destination }),
    ...(origin === undefined ? {} : { origin }),
    originTraceId,
    ...(last?.statusMessage === undefined ? {} : { lastError: last.statusMessage }),
    ...(delivers.length === 0 ? {} : { attempts: delivers.filter(wasAttempt).length }),
    source: 'traces',
    ...(unsampled === undefined ? {} : { sampledOut: unsampled }),
  };
}

/** An attempt or background work that failed: the exception event recordFailure adds. */
function hasFailure(span: StoredSpan): boolean {
  return span.events.some((event) => event.name === 'exception');
}
