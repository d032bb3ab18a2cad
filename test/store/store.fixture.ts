// What the store tests store, without the gateway's test helpers: the store needs none of it.
import type { Destination } from '../../src/session/delivery.js';
import type { RoutingSnapshot } from '../../src/session/index.js';
import type { ProcessRecord } from '../../src/store/store.js';

/** A webhook routing snapshot of `chatId` with the span that captured it, as captureRouting makes one. */
export function routingOf(chatId: string, sessionId = 'tl_session', threadId?: string): RoutingSnapshot {
  return {
    v: 1,
    session: { platform: 'webhook', chatType: 'dm', chatId, sessionId, ...(threadId === undefined ? {} : { threadId }) },
    origin: { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1 },
  };
}

/** A webhook chat, and a thread of it when given. */
export function chat(chatId: string, threadId?: string): Destination {
  return { platform: 'webhook', chatId, ...(threadId === undefined ? {} : { threadId }) };
}

/** A background command of `chatId` (and thread) that asks to be told when it ends. */
export function processRecord(id: string, chatId = 'c:1', threadId?: string): ProcessRecord {
  return {
    id,
    origin: routingOf(chatId, 'tl_session', threadId),
    destination: chat(chatId, threadId),
    command: `sleep 5 # ${id}`,
    pid: 4242,
    startedAt: 1_000,
    notifyOnComplete: true,
    progressSent: 0,
  };
}
