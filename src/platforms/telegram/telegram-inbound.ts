import type { ChatType } from '../../session/index.js';
import { displayName } from '../display-name.js';
import type { InboundMessage } from '../platform.js';

const CHAT_TYPES: Record<string, ChatType> = { private: 'dm', group: 'group', supergroup: 'group', channel: 'channel' };

/**
 * Accounts Telegram shows as the sender of a message that someone posts as a chat: an anonymous
 * group admin (GroupAnonymousBot), a channel (Channel_Bot), a linked channel's post (777000).
 * Every such message in every group shares the id, so it names nobody.
 */
const SHARED_SENDER_IDS: ReadonlySet<number> = new Set([1087968824, 136817688, 777000]);

/**
 * The InboundMessage of a Telegram update, or undefined for updates that carry no text
 * for the agent (edits, joins, stickers). A forum topic's message_thread_id becomes the
 * thread id, so the reply goes back into the topic, never into "General" (pitfall: Replies that lose their thread).
 * The update is untrusted input: every field is checked before it is read.
 */
export function telegramInbound(update: unknown): InboundMessage | undefined {
  const press = buttonPressOf(update);
  if (press !== undefined) return press.message;
  const message = record(record(update)?.['message']) ?? record(record(update)?.['channel_post']);
  const chat = record(message?.['chat']);
  if (message === undefined || chat === undefined) return undefined;
  const text = message['text'];
  const chatId = chat['id'];
  const chatType = typeof chat['type'] === 'string' ? CHAT_TYPES[chat['type']] : undefined;
  const messageId = message['message_id'];
  if (typeof text !== 'string' || text === '' || chatType === undefined) return undefined;
  if (!Number.isSafeInteger(chatId) || !Number.isSafeInteger(messageId)) return undefined;
  const threadId = message['is_topic_message'] === true ? message['message_thread_id'] : undefined;
  // Posted as a chat (`sender_chat`), by one of the shared accounts, or written by someone else
  // (forwarded, sent through an inline bot): no user of its own, so it carries no one's rights.
  const from =
    message['sender_chat'] !== undefined || SHARED_SENDER_IDS.has(record(message['from'])?.['id'] as number) || writtenByAnother(message) ? undefined : record(message['from']);
  return inboundOf(chat, chatType, threadId, from, String(messageId), text);
}

/** Forwarded (either spelling of the Bot API), or composed by an inline bot: the sender only passed it on. */
function writtenByAnother(message: Record<string, unknown>): boolean {
  return ['forward_origin', 'forward_from', 'forward_from_chat', 'forward_sender_name', 'forward_date', 'via_bot'].some((field) => message[field] !== undefined);
}

/** Telegram's callback query ids: opaque, short, printable. */
const QUERY_ID = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * A press of a CommandButton (a callback query): the command the button carries, posted in the
 * button's chat and topic as the user who pressed it, who Telegram names. Its message id is
 * the query's, so each press is a message of its own (two admins may press one button).
 */
export function buttonPressOf(update: unknown): { readonly message: InboundMessage; readonly queryId: string } | undefined {
  const query = record(record(update)?.['callback_query']);
  const message = record(query?.['message']);
  const chat = record(message?.['chat']);
  const from = record(query?.['from']);
  const queryId = query?.['id'];
  const data = query?.['data'];
  if (message === undefined || chat === undefined || from === undefined) return undefined;
  if (typeof queryId !== 'string' || !QUERY_ID.test(queryId) || typeof data !== 'string' || !data.startsWith('/')) return undefined;
  const chatType = typeof chat['type'] === 'string' ? CHAT_TYPES[chat['type']] : undefined;
  if (chatType === undefined || !Number.isSafeInteger(chat['id']) || !Number.isSafeInteger(from['id'])) return undefined;
  const threadId = message['is_topic_message'] === true ? message['message_thread_id'] : undefined;
  return { message: inboundOf(chat, chatType, threadId, SHARED_SENDER_IDS.has(from['id'] as number) ? undefined : from, `press-${queryId}`, data), queryId };
}

function inboundOf(
  chat: Record<string, unknown>,
  chatType: ChatType,
  threadId: unknown,
  from: Record<string, unknown> | undefined,
  messageId: string,
  text: string,
): InboundMessage {
  const chatId = chat['id'] as number;
  const chatName = displayName(chat['title']);
  const userName = displayName(from?.['username'] ?? from?.['first_name']);
  return {
    session: {
      platform: 'telegram',
      chatId: String(chatId),
      chatType,
      ...(chatName === undefined ? {} : { chatName }),
      ...(Number.isSafeInteger(threadId) ? { threadId: String(threadId) } : {}),
      ...(Number.isSafeInteger(from?.['id']) ? { userId: String(from!['id']) } : {}),
      ...(userName === undefined ? {} : { userName }),
      messageId,
    },
    text,
  };
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
