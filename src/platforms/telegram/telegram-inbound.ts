import type { Message, Update } from 'grammy/types';
import type { ChatType } from '../../session/index.js';
import type { InboundMessage } from '../platform.js';

const CHAT_TYPES: Record<string, ChatType> = { private: 'dm', group: 'group', supergroup: 'group', channel: 'channel' };

/**
 * The InboundMessage of a Telegram update, or undefined for updates that carry no text
 * for the agent (edits, joins, stickers). A forum topic's message_thread_id becomes the
 * thread id, so the reply goes back into the topic, never into "General" (lesson 7).
 * Only typed fields are read; the update is untrusted input.
 */
export function telegramInbound(update: Update): InboundMessage | undefined {
  const message: Message | undefined = update.message ?? update.channel_post;
  if (message === undefined || typeof message.text !== 'string' || message.text === '') return undefined;
  const chat = message.chat;
  const chatType = CHAT_TYPES[chat.type];
  if (chatType === undefined || (typeof chat.id !== 'number' && typeof chat.id !== 'string')) return undefined;
  const title = 'title' in chat && typeof chat.title === 'string' ? chat.title : undefined;
  const from = message.from;
  return {
    session: {
      platform: 'telegram',
      chatId: String(chat.id),
      chatType,
      ...(title === undefined ? {} : { chatName: title }),
      ...(message.is_topic_message === true && message.message_thread_id !== undefined
        ? { threadId: String(message.message_thread_id) }
        : {}),
      ...(from === undefined ? {} : { userId: String(from.id), userName: from.username ?? from.first_name }),
      messageId: String(message.message_id),
    },
    text: message.text,
  };
}
