import type { SpanAttributes, SpanEvent, StoredSpan, StoredTrace } from '../../src/forensics/trace-model.js';

let nextId = 1;

/** A hex id of `length` digits, unique in the test file. */
export function hexId(length: 16 | 32): string {
  return (nextId++).toString(16).padStart(length, '0');
}

/** A span as a source would return it; times in ms from `at`. */
export function storedSpan(fields: Partial<StoredSpan> & { name: string; traceId: string }): StoredSpan {
  const startMs = fields.startMs ?? 1_000;
  return {
    spanId: hexId(16),
    endMs: startMs + 5,
    attributes: {},
    events: [],
    links: [],
    status: 'unset',
    ...fields,
    startMs,
  };
}

/** The attributes the session span processor stamps. */
export function stamped(platform: string, chatId: string, threadId?: string): SpanAttributes {
  return { 'chat.platform': platform, 'chat.id': chatId, ...(threadId === undefined ? {} : { 'chat.thread.id': threadId }) };
}

/** The router's gateway.deliver attributes for a delivery from `origin` to `destination`. */
export function deliverAttributes(
  id: string,
  kind: string,
  target: string,
  origin: [string, string, string?],
  destination: [string, string, string?],
): SpanAttributes {
  return {
    ...stamped(...destination),
    'delivery.id': id,
    'delivery.kind': kind,
    'delivery.target': target,
    'delivery.attempt': 1,
    'routing.destination.platform': destination[0],
    'routing.destination.chat.id': destination[1],
    ...(destination[2] === undefined ? {} : { 'routing.destination.chat.thread.id': destination[2] }),
    'routing.origin.platform': origin[0],
    'routing.origin.chat.id': origin[1],
    ...(origin[2] === undefined ? {} : { 'routing.origin.chat.thread.id': origin[2] }),
  };
}

/** The guard's routing.mismatch event. */
export function mismatchEvent(origin: [string, string, string?], destination: [string, string, string?], timeMs = 1_001): SpanEvent {
  return {
    name: 'routing.mismatch',
    timeMs,
    attributes: {
      'routing.origin.platform': origin[0],
      'routing.origin.chat.id': origin[1],
      'routing.origin.chat.thread.id': origin[2] ?? '',
      'routing.destination.platform': destination[0],
      'routing.destination.chat.id': destination[1],
      'routing.destination.chat.thread.id': destination[2] ?? '',
    },
  };
}

/** A turn's trace: gateway.message → agent.turn → execute_tool, stamped with `chat`; returns the trace and its spans. */
export function turnTrace(chat: [string, string, string?], startMs = 1_000) {
  const traceId = hexId(32);
  const message = storedSpan({ name: 'gateway.message', traceId, startMs, attributes: stamped(...chat) });
  const turn = storedSpan({ name: 'agent.turn', traceId, startMs: startMs + 1, parentSpanId: message.spanId, attributes: stamped(...chat) });
  const tool = storedSpan({ name: 'execute_tool terminal', traceId, startMs: startMs + 2, parentSpanId: turn.spanId, attributes: stamped(...chat) });
  return { traceId, message, turn, tool };
}

export function traceOf(...spans: StoredSpan[]): StoredTrace {
  return { traceId: spans[0]!.traceId, spans };
}
