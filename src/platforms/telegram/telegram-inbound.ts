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
  // Posted as a chat (`sender_chat`), or by one of the shared accounts: no user of its own.
  const from = message['sender_chat'] !== undefined || SHARED_SENDER_IDS.has(record(message['from'])?.['id'] as number) ? undefined : record(message['from']);
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
      messageId: String(messageId),
    },
    text,
  };
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
