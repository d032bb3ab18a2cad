/**
 * Dotted names shared by span attributes, baggage entries and log fields, so that one
 * name finds a conversation everywhere (Jaeger search, downstream baggage, log queries).
 */
export const CHAT_PLATFORM = 'chat.platform';
export const CHAT_ID = 'chat.id';
export const CHAT_NAME = 'chat.name';
export const CHAT_TYPE = 'chat.type';
export const CHAT_THREAD_ID = 'chat.thread.id';
export const USER_ID = 'user.id';
export const USER_NAME = 'user.name';
export const MESSAGE_ID = 'message.id';
export const SESSION_ID = 'session.id';
/** OpenTelemetry GenAI semantic convention for a conversation; equals session.id. */
export const GEN_AI_CONVERSATION_ID = 'gen_ai.conversation.id';

/**
 * Baggage keys in these namespaces belong to threadline. Inbound baggage in them is
 * dropped, whatever its case, so a caller can never pose as a chat (pitfall: Routing taken from inbound baggage).
 */
const SESSION_NAMESPACES = ['chat.', 'session.', 'user.', 'message.', 'threadline.', 'gen_ai.conversation.'];

export function isSessionNamespaceKey(key: string): boolean {
  const lower = key.toLowerCase();
  for (const prefix of SESSION_NAMESPACES) {
    if (lower.startsWith(prefix)) return true;
  }
  return false;
}
