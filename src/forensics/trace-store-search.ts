/**
 * What the Jaeger and Tempo sources ask their store for a TraceQuery, and how they put the
 * answers together: the same span filters for both, checked again on what comes back (a store
 * may ignore a filter it does not support), then one list with the errored traces first.
 */
import type { TraceQuery } from './trace-source.js';
import { FORENSIC_SPAN } from '../telemetry/forensic-names.js';
import type { StoredSpan, StoredTrace } from './trace-model.js';

/** One search a store runs: a span with this name (when given), these string attributes, and an error status when `errorOnly`. */
export interface SpanFilter {
  readonly operation?: string;
  readonly attributes: Readonly<Record<string, string>>;
  readonly errorOnly: boolean;
}

export const DELIVER_SPAN = 'gateway.deliver';

/** The attributes a delivery span names a chat by: its own routing, where it went, where its work came from. */
const DELIVERY_CHAT_KEYS: readonly (readonly [chat: string, thread: string])[] = [
  ['chat.id', 'chat.thread.id'],
  ['routing.destination.chat.id', 'routing.destination.chat.thread.id'],
  ['routing.origin.chat.id', 'routing.origin.chat.thread.id'],
];

/**
 * The searches that together answer `query`. For deliveries each is asked twice, the second
 * time for errored spans only and listed first, so the limit cannot crowd errors out; with
 * a chat, once per attribute that can name it (stores have no OR across attributes); and
 * once more for the forensic copies of deliveries whose traces were not sampled.
 */
export function spanFilters(query: TraceQuery): SpanFilter[] {
  const chatKeys = query.purpose === 'conversation' ? DELIVERY_CHAT_KEYS.slice(0, 1) : DELIVERY_CHAT_KEYS;
  const attributeSets: Record<string, string>[] =
    query.chatId === undefined
      ? [{}]
      : chatKeys.map(([chatKey, threadKey]) => ({
          [chatKey]: query.chatId!,
          ...(query.threadId === undefined ? {} : { [threadKey]: query.threadId }),
        }));
  if (query.purpose === 'conversation') return attributeSets.map((attributes) => ({ attributes, errorOnly: false }));
  return [true, false].flatMap((errorOnly) =>
    [DELIVER_SPAN, FORENSIC_SPAN].flatMap((operation) => attributeSets.map((attributes) => ({ operation, attributes, errorOnly }))),
  );
}

/** Whether `span` is one `filter` asks for, in the query's service (a span that names none passes) and window. */
export function spanMatches(span: StoredSpan, filter: SpanFilter, query: TraceQuery): boolean {
  if (span.service !== undefined && span.service !== query.service) return false;
  if (span.startMs < query.since || span.startMs > query.until) return false;
  if (filter.operation !== undefined && span.name !== filter.operation) return false;
  if (filter.errorOnly && span.status !== 'error') return false;
  return Object.entries(filter.attributes).every(([key, value]) => {
    const held = span.attributes[key];
    return held !== undefined && String(held) === value;
  });
}

/** Whether some span of `trace` is one `filters` ask for. */
export function traceMatches(trace: StoredTrace, filters: readonly SpanFilter[], query: TraceQuery): boolean {
  return trace.spans.some((span) => filters.some((filter) => spanMatches(span, filter, query)));
}

/**
 * One list from several answers: each trace once (the copy with the most spans), those
 * holding an error span first, then the newest first, at most `limit`.
 */
export function rankTraces(answers: Iterable<StoredTrace>, limit: number): StoredTrace[] {
  const byId = new Map<string, StoredTrace>();
  for (const trace of answers) {
    const known = byId.get(trace.traceId);
    if (known === undefined || trace.spans.length > known.spans.length) byId.set(trace.traceId, trace);
  }
  const ranked = [...byId.values()].map((trace) => ({
    trace,
    errored: trace.spans.some((span) => span.status === 'error'),
    startMs: trace.spans.reduce((earliest, span) => Math.min(earliest, span.startMs), Number.POSITIVE_INFINITY),
  }));
  ranked.sort((a, b) => Number(b.errored) - Number(a.errored) || b.startMs - a.startMs);
  return ranked.slice(0, Math.max(0, limit)).map((entry) => entry.trace);
}

/** A trace id as the model holds it (32 lowercase hex digits), or undefined when `id` is not one. */
export function normalTraceId(id: string): string | undefined {
  return /^[0-9a-fA-F]{1,32}$/.test(id) && !/^0+$/.test(id) ? id.toLowerCase().padStart(32, '0') : undefined;
}
