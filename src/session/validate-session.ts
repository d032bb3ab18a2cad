import { SessionFieldError, ThreadlineError } from '../errors.js';
import type { Destination } from './delivery.js';
import { CHAT_TYPES, SESSION_FIELDS, type ChatType, type Session, type SessionInput } from './session.js';
import { deriveSessionId } from './session-key.js';

/** Longest id or name accepted, in UTF-16 code units. Bounds baggage, keys and span size. */
export const MAX_FIELD_LENGTH = 256;

const PLATFORM_PATTERN = /^[a-z][a-z0-9_-]{0,31}$/;
// Control characters (C0, DEL, C1), the Unicode line separators and lone surrogates (which
// \p{Cs} matches only when unpaired in /u mode): they break logs, headers, env files and
// percent-encoding.
const UNSAFE_CHARACTERS = /[\p{Cc}\u2028\u2029\p{Cs}]/u;
const KNOWN_FIELDS: ReadonlySet<string> = new Set(SESSION_FIELDS);

/** Sessions that passed createSession; entering one of these again skips validation. */
const validated = new WeakSet<Session>();

export function isValidatedSession(value: unknown): value is Session {
  return typeof value === 'object' && value !== null && validated.has(value as Session);
}

/**
 * Validates routing input and returns a frozen Session. Throws SessionFieldError naming the
 * first bad field. Unknown fields are refused so a typo (threadID) cannot silently drop a
 * thread and send a reply to the main chat.
 */
export function createSession(input: SessionInput): Session {
  if (isValidatedSession(input)) return input;
  if (typeof input !== 'object' || input === null) {
    throw new SessionFieldError('session', `expected an object, got ${describe(input)}`);
  }
  for (const key of Object.keys(input)) {
    if (!KNOWN_FIELDS.has(key)) {
      throw new SessionFieldError(key, `unknown field; expected one of ${SESSION_FIELDS.join(', ')}`);
    }
  }
  const platform = requiredText(input, 'platform');
  if (!PLATFORM_PATTERN.test(platform)) {
    throw new SessionFieldError('platform', 'must be a lowercase name like "telegram" (a-z, 0-9, _ or -, at most 32)');
  }
  const chatType = input.chatType as unknown;
  if (!CHAT_TYPES.includes(chatType as ChatType)) {
    throw new SessionFieldError('chatType', `must be one of ${CHAT_TYPES.join(', ')}, got ${describe(chatType)}`);
  }
  const chatId = requiredText(input, 'chatId');
  const threadId = optionalText(input, 'threadId');
  const userId = optionalText(input, 'userId');
  const session: Session = {
    platform,
    chatId,
    chatType: chatType as ChatType,
    ...optional('chatName', optionalText(input, 'chatName')),
    ...optional('threadId', threadId),
    ...optional('userId', userId),
    ...optional('userName', optionalText(input, 'userName')),
    ...optional('messageId', optionalText(input, 'messageId')),
    sessionId:
      optionalText(input, 'sessionId') ??
      deriveSessionId({ platform, chatType: chatType as ChatType, chatId, threadId }),
  };
  Object.freeze(session);
  validated.add(session);
  return session;
}

/**
 * The session with another session id (after /new, say). Only the id is checked again when
 * `session` came from createSession.
 */
export function withSessionId(session: Session, sessionId: string): Session {
  if (!validated.has(session)) return createSession({ ...session, sessionId });
  const next: Session = Object.freeze({ ...session, sessionId: requiredText({ sessionId }, 'sessionId') });
  validated.add(next);
  return next;
}

function requiredText(input: object, field: string): string {
  const value = optionalText(input, field);
  if (value === undefined) throw new SessionFieldError(field, 'is required');
  return value;
}

/** Checks one text field; exported for other modules that accept ids (session keys). */
export function optionalText(input: object, field: string): string | undefined {
  const value = (input as Record<string, unknown>)[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') {
    throw new SessionFieldError(field, `must be a string, got ${describe(value)}; convert numeric ids with String(id)`);
  }
  if (value.length === 0) throw new SessionFieldError(field, 'must not be empty; omit the field when there is none');
  const problem = idProblem(value);
  if (problem !== undefined) throw new SessionFieldError(field, problem);
  return value;
}

/** What is wrong with a non-empty id or name, in words, or undefined when nothing is. */
function idProblem(value: string): string | undefined {
  if (value.length > MAX_FIELD_LENGTH) return `must be at most ${MAX_FIELD_LENGTH} characters, got ${value.length}`;
  if (UNSAFE_CHARACTERS.test(value)) return 'must not contain control characters, line separators or lone surrogates';
  return undefined;
}

/**
 * Checks a destination named from outside any session (a send_message, `/send`, `threadline
 * send` or cron target) by the rules its platform, chat and thread ids meet when a message
 * arrives from them, so no id a platform could never have sent (a NUL, a newline, 990
 * characters) is stored or sent to. Throws TL_TARGET_INVALID naming the bad part.
 */
export function validateDestination(destination: Destination): Destination {
  if (!PLATFORM_PATTERN.test(destination.platform)) {
    throw new ThreadlineError('TL_TARGET_INVALID', `The target's platform ${quoted(destination.platform)} is no platform name (a-z, 0-9, _ or -, at most 32)`);
  }
  for (const [part, value] of [['chat id', destination.chatId], ['thread id', destination.threadId]] as const) {
    if (value === undefined) continue;
    const problem = value === '' ? 'must not be empty' : idProblem(value);
    if (problem !== undefined) throw new ThreadlineError('TL_TARGET_INVALID', `The target's ${part} ${quoted(value)} ${problem}`);
  }
  return destination;
}

/** An id quoted in an error: its start, escaped, so no control character or line separator of it reaches the message. */
function quoted(value: string): string {
  // JSON escapes control characters and lone surrogates, not the line separators.
  return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value).replace(/[\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'string' ? JSON.stringify(value.slice(0, 40)) : typeof value;
}
