import { displayName } from '../display-name.js';
import type { InboundMessage } from '../platform.js';
import { isEventId, isUserId } from './matrix-ids.js';

/** What one timeline event is to the gateway. */
export type MatrixEventOutcome =
  | { readonly kind: 'message'; readonly message: InboundMessage }
  /** End-to-end encrypted: threadline cannot read it, and says so (never silently). */
  | { readonly kind: 'encrypted'; readonly eventId: string | undefined }
  | { readonly kind: 'ignored'; readonly reason: string };

/**
 * The InboundMessage of a room's timeline event, or why there is none. A person's text
 * (`m.room.message`, msgtype `m.text`) is a message; an `m.thread` relation makes its root the
 * thread id, so the reply goes back into the thread; a thread's root itself is a top-level
 * message. Not messages: the bot's own events, notices (`m.notice`, what bots send: answering
 * them would let two bots talk forever), edits (`m.replace`), state and other event types.
 * Every room is a group chat: Matrix has no kind of room that is a direct chat (`m.direct`
 * is a note each client keeps), and a chat type that changed would change the session.
 * The event is untrusted: every field is checked before it is read.
 */
export function matrixInbound(roomId: string, event: unknown, botUserId: string): MatrixEventOutcome {
  const e = record(event);
  if (e === undefined) return ignored('not an object');
  const { type, sender } = e;
  const eventId = e['event_id'];
  if (type === 'm.room.encrypted') return { kind: 'encrypted', eventId: isEventId(eventId) ? eventId : undefined };
  if (type !== 'm.room.message' || e['state_key'] !== undefined) return ignored('not a message');
  if (!isEventId(eventId) || !isUserId(sender)) return ignored('without a valid event id or sender');
  if (sender === botUserId) return ignored('sent by this bot');
  const content = record(e['content']);
  const relation = record(content?.['m.relates_to']);
  if (relation?.['rel_type'] === 'm.replace') return ignored('an edit');
  if (content?.['msgtype'] !== 'm.text') return ignored(content?.['msgtype'] === 'm.notice' ? 'a notice (bots do not answer them)' : 'not text');
  const body = content['body'];
  if (typeof body !== 'string') return ignored('without a body');
  const text = relation?.['m.in_reply_to'] === undefined ? body : withoutReplyFallback(body);
  if (text.trim() === '') return ignored('empty');
  const threadId = relation?.['rel_type'] === 'm.thread' && isEventId(relation['event_id']) ? relation['event_id'] : undefined;
  const userName = displayName(sender.slice(1, sender.indexOf(':')));
  return {
    kind: 'message',
    message: {
      session: {
        platform: 'matrix',
        chatId: roomId,
        chatType: 'group',
        ...(threadId === undefined ? {} : { threadId }),
        userId: sender,
        ...(userName === undefined ? {} : { userName }),
        messageId: eventId,
      },
      text,
    },
  };
}

/**
 * A reply's text without the quote that clients before Matrix 1.13 put first (`> <@user> …`
 * lines, then an empty line): the quote is the other message, not what was said.
 */
export function withoutReplyFallback(body: string): string {
  const lines = body.split('\n');
  let at = 0;
  while (at < lines.length && lines[at]!.startsWith('>')) at++;
  if (at === 0) return body;
  if (lines[at] === '') at++;
  return lines.slice(at).join('\n');
}

function ignored(reason: string): MatrixEventOutcome {
  return { kind: 'ignored', reason };
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
