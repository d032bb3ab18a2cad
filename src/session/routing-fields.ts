import { CHAT_ID, CHAT_PLATFORM, CHAT_THREAD_ID, CHAT_TYPE, SESSION_ID, USER_ID } from './names.js';
import type { Session } from './session.js';

/**
 * A session's routing under its dotted names, absent fields left out. Names (chat.name,
 * user.name) are not routing and never in here: baggage goes to every downstream host and
 * logs are kept, and names are personal data (pitfall: Personal data in outbound baggage).
 */
export function routingFields(session: Session): Record<string, string> {
  const fields: Record<string, string> = {
    [CHAT_PLATFORM]: session.platform,
    [CHAT_TYPE]: session.chatType,
    [CHAT_ID]: session.chatId,
    [SESSION_ID]: session.sessionId,
  };
  if (session.threadId !== undefined) fields[CHAT_THREAD_ID] = session.threadId;
  if (session.userId !== undefined) fields[USER_ID] = session.userId;
  return fields;
}
