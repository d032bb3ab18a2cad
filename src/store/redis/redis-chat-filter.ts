import type { OverdueQuery } from '../store.js';

/** Whether a stored destination (formatDestination's spelling) or routing snapshot (JSON) is of the asked chat. */
export interface ChatFilter {
  /** True when no chat or thread was asked: everything matches. */
  readonly any: boolean;
  destination(stored: string | undefined): boolean;
  origin(stored: string | undefined): boolean;
}

/**
 * The forensics reads' chat filter, as SQLite's destinationMatches and originMatches read it:
 * destinations compare percent-encoded ids (a chat alone or followed by ':' and its thread),
 * snapshots compare plain ids in `session`; what does not parse matches nothing.
 */
export function chatFilterOf(query: OverdueQuery): ChatFilter {
  const { chatId, threadId } = query;
  const chat = chatId === undefined ? undefined : encodeURIComponent(chatId);
  const thread = threadId === undefined ? undefined : encodeURIComponent(threadId);
  return {
    any: chatId === undefined && threadId === undefined,
    destination: (stored) => {
      const colon = stored?.indexOf(':') ?? -1;
      if (stored === undefined || colon < 0) return false;
      const rest = stored.slice(colon + 1);
      const threadAt = rest.indexOf(':');
      if (chat !== undefined && rest !== chat && !rest.startsWith(`${chat}:`)) return false;
      return thread === undefined || (threadAt >= 0 && rest.slice(threadAt + 1) === thread);
    },
    origin: (stored) => {
      const session = sessionOf(stored);
      if (session === undefined) return false;
      return (chatId === undefined || session.chatId === chatId) && (threadId === undefined || session.threadId === threadId);
    },
  };
}

/** The `session` of a stored snapshot, or undefined when it is not JSON. */
export function sessionOf(stored: string | undefined): Record<string, unknown> | undefined {
  if (stored === undefined) return undefined;
  try {
    const snapshot: unknown = JSON.parse(stored);
    const session = typeof snapshot === 'object' && snapshot !== null ? (snapshot as { session?: unknown }).session : undefined;
    return typeof session === 'object' && session !== null ? (session as Record<string, unknown>) : {};
  } catch {
    return undefined;
  }
}
