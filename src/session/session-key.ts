import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { ThreadlineError } from '../errors.js';
import { CHAT_TYPES, type ChatType } from './session.js';

/** The routing parts that identify one conversation. userId only for per-user group sessions. */
export interface SessionKeyParts {
  readonly platform: string;
  readonly chatType: ChatType;
  readonly chatId: string;
  readonly threadId?: string | undefined;
  readonly userId?: string | undefined;
}

const VERSION = 'v1';

/**
 * An unambiguous text key for a conversation. Each part is percent-encoded, so no id can
 * contain the ':' separator, and an absent part is the empty string, which no valid id is.
 * Joining raw ids with ':' makes "a:b"+"c" and "a"+"b:c" collide (pitfall: Colliding
 * session keys).
 */
export function sessionKey(parts: SessionKeyParts): string {
  return [VERSION, parts.platform, parts.chatType, parts.chatId, parts.threadId ?? '', parts.userId ?? '']
    .map(encodeURIComponent)
    .join(':');
}

/** Inverse of sessionKey; throws TL_SNAPSHOT_INVALID for text sessionKey cannot have made. */
export function parseSessionKey(key: string): SessionKeyParts {
  if (typeof key !== 'string') {
    throw new ThreadlineError('TL_SNAPSHOT_INVALID', `A session key is a string, got ${key === null ? 'null' : typeof key}`);
  }
  const pieces = key.split(':');
  if (pieces.length !== 6 || pieces[0] !== VERSION) {
    throw new ThreadlineError('TL_SNAPSHOT_INVALID', `Not a threadline session key: ${JSON.stringify(key.slice(0, 80))}`);
  }
  let decoded: string[];
  try {
    decoded = pieces.map(decodeURIComponent);
  } catch (cause) {
    throw new ThreadlineError('TL_SNAPSHOT_INVALID', 'Session key has broken percent-encoding', { cause });
  }
  const [, platform, chatType, chatId, threadId, userId] = decoded as [string, string, ChatType, string, string, string];
  const parts: SessionKeyParts = {
    platform,
    chatType,
    chatId,
    ...(threadId === '' ? {} : { threadId }),
    ...(userId === '' ? {} : { userId }),
  };
  // Platform and chat are required and the type is an enum; a key spelled differently from
  // what sessionKey writes (%61 for a) would be a second key for the same conversation.
  if (platform === '' || chatId === '' || !CHAT_TYPES.includes(chatType) || sessionKey(parts) !== key) {
    throw new ThreadlineError('TL_SNAPSHOT_INVALID', `Not a session key sessionKey() writes: ${JSON.stringify(key.slice(0, 80))}`);
  }
  return parts;
}

/**
 * A short, stable session id: a hash of the key, so it is fixed-length and safe everywhere.
 * `epoch` counts conversations started afresh in the same chat (/new); 0 is the first.
 */
export function deriveSessionId(parts: SessionKeyParts, epoch = 0): string {
  return sessionIdOfKey(sessionKey(parts), epoch);
}

/**
 * Session ids hashed recently. Every message of a chat needs its id (three times on the
 * gateway's path, moments apart); a lookup costs a fraction of a SHA-256. Bounded: the
 * least recently used are hashed again. Small, since it holds whole keys, which run to
 * kilobytes for long ids: enough for the messages in flight, not a second record of every chat.
 */
export const RECENT_SESSION_IDS = 1_000;
const recentIds = new LRUCache<string, string>({ max: RECENT_SESSION_IDS });

/** deriveSessionId for a caller that already holds the session key. */
export function sessionIdOfKey(key: string, epoch = 0): string {
  const input = epoch === 0 ? key : `${key}#${epoch}`;
  let id = recentIds.get(input);
  if (id === undefined) {
    id = 'tl_' + createHash('sha256').update(input).digest('base64url').slice(0, 22);
    recentIds.set(input, id);
  }
  return id;
}
