import type { RoutingView } from './findings.js';
import { textAttribute, type SpanAttributes } from './trace-model.js';

/**
 * The routing under `prefix` in a set of attributes: the stamped `chat.` (platform, id,
 * thread.id), or the delivery code's `routing.origin.` and `routing.destination.`. An empty
 * thread id (the mismatch event's "no thread") reads as none. Undefined without a platform.
 */
export function routingAt(attributes: SpanAttributes, prefix: 'chat.' | 'routing.origin.' | 'routing.destination.'): RoutingView | undefined {
  const holder = { attributes };
  const platform = textAttribute(holder, `${prefix}platform`);
  if (platform === undefined || platform === '') return undefined;
  const chatId = textAttribute(holder, `${prefix}${prefix === 'chat.' ? 'id' : 'chat.id'}`);
  const threadId = textAttribute(holder, `${prefix}${prefix === 'chat.' ? 'thread.id' : 'chat.thread.id'}`);
  return {
    platform,
    ...(chatId === undefined || chatId === '' ? {} : { chatId }),
    ...(threadId === undefined || threadId === '' ? {} : { threadId }),
  };
}

/** Same conversation: platform, chat and thread (ids absent on both sides count as equal). */
export function sameRouting(a: RoutingView, b: RoutingView): boolean {
  return a.platform === b.platform && a.chatId === b.chatId && a.threadId === b.threadId;
}

/** Whether a routing is the asked chat (and thread, when asked). */
export function isConversation(routing: RoutingView | undefined, chatId: string, threadId?: string): boolean {
  return routing !== undefined && routing.chatId === chatId && (threadId === undefined || routing.threadId === threadId);
}
