import { names, type Session, type SessionInput } from '../../src/session/index.js';

/** A session with every field set: a Telegram forum topic, as a message would enter it. */
export const FULL_SESSION: SessionInput = {
  platform: 'telegram',
  chatType: 'group',
  chatId: '-1001234',
  chatName: 'Ops room',
  threadId: '42',
  userId: 'u-7',
  userName: 'Ada Lovelace',
  messageId: 'm-1',
};

/**
 * FULL_SESSION with `changes` applied; a change to `undefined` removes the field. Values are
 * `unknown` so tests can feed wrong types to validation.
 */
export function sessionInput(changes: Readonly<Record<string, unknown>> = {}, base: SessionInput = FULL_SESSION): SessionInput {
  return withChanges(base, changes) as unknown as SessionInput;
}

/** A copy of `base` with `changes` applied; a change to `undefined` removes the member. */
export function withChanges(base: object, changes: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const changed: Record<string, unknown> = { ...base, ...changes };
  for (const [key, value] of Object.entries(changes)) if (value === undefined) delete changed[key];
  return changed;
}

/** The least a session needs: platform, type and chat. */
export const MINIMAL_SESSION: SessionInput = { platform: 'slack', chatType: 'channel', chatId: 'C024BE91L' };

/**
 * The routing of `session` under the dotted names the README documents for baggage and log
 * records (not names, not the reply anchor); absent fields are left out, and with `keys`
 * only those are kept.
 */
export function routingRecord(session: Session, keys?: readonly string[]): Record<string, string> {
  const record: Record<string, string | undefined> = {
    [names.CHAT_PLATFORM]: session.platform,
    [names.CHAT_TYPE]: session.chatType,
    [names.CHAT_ID]: session.chatId,
    [names.CHAT_THREAD_ID]: session.threadId,
    [names.USER_ID]: session.userId,
    [names.SESSION_ID]: session.sessionId,
  };
  return Object.fromEntries(
    Object.entries(record).filter((entry): entry is [string, string] => entry[1] !== undefined && (keys === undefined || keys.includes(entry[0]))),
  );
}
