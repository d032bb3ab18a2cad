import { displayName } from '../display-name.js';
import type { InboundMessage } from '../platform.js';

/** Discord's ids: snowflakes, decimal numbers of at most 20 digits. */
const SNOWFLAKE = /^\d{1,20}$/;
/** Message types a person writes: a plain message (0) and a reply (19); joins, pins and thread notices are not. */
const PERSON_TYPES: ReadonlySet<unknown> = new Set([0, 19]);

export function isSnowflake(value: unknown): value is string {
  return typeof value === 'string' && SNOWFLAKE.test(value);
}

/** A MESSAGE_CREATE the bot answers, before its channel is placed (a channel, or a thread of one). */
export interface DiscordMessage {
  readonly id: string;
  /** The channel it was written in: a thread is a channel of its own. */
  readonly channelId: string;
  /** Absent in a direct message. */
  readonly guildId: string | undefined;
  readonly authorId: string;
  readonly authorName: string | undefined;
  /** The content, the bot's mentions taken out. */
  readonly text: string;
}

/**
 * The message of a MESSAGE_CREATE's data when the bot answers it: every direct message, and
 * in a server a message that mentions the bot (or replies to it, which mentions it). Bots'
 * messages (its own included), webhooks' and system messages (joins, pins, thread notices) are
 * not taken. The data is untrusted: every field is checked before it is read.
 */
export function takenMessage(data: unknown, botId: string): DiscordMessage | undefined {
  const message = record(data);
  const author = record(message?.['author']);
  if (message === undefined || author === undefined) return undefined;
  const { id, channel_id: channelId, guild_id: guildId, content } = message;
  if (!isSnowflake(id) || !isSnowflake(channelId) || !isSnowflake(author['id']) || typeof content !== 'string') return undefined;
  if (author['bot'] === true || message['webhook_id'] !== undefined || !PERSON_TYPES.has(message['type'] ?? 0)) return undefined;
  if (guildId !== undefined && !isSnowflake(guildId)) return undefined;
  const mention = new RegExp(`<@!?${botId}>`, 'g');
  if (guildId !== undefined && !mentionsBot(message['mentions'], botId) && !mention.test(content)) return undefined;
  const text = content.replace(mention, '').trim();
  if (text === '') return undefined;
  return {
    id,
    channelId,
    guildId,
    authorId: author['id'] as string,
    authorName: displayName(author['global_name'] ?? author['username']),
    text,
  };
}

/** `/thread <text>` in a server channel: the bot opens a thread from the message and answers there. */
const THREAD_REQUEST = /^\/thread(?:\s+|$)/i;

/** The text of a message that asks for a thread of its own, without the request; undefined when it does not ask. */
export function threadRequest(message: DiscordMessage): string | undefined {
  if (message.guildId === undefined || !THREAD_REQUEST.test(message.text)) return undefined;
  return message.text.replace(THREAD_REQUEST, '');
}

/**
 * The InboundMessage of a taken message. `parentId` is the channel a thread belongs to, for a
 * message written in a thread: the chat is then that channel and the thread id the thread's
 * channel id, so replies are sent into the thread (pitfall: Replies that lose their thread).
 */
export function discordInbound(message: DiscordMessage, parentId: string | undefined, anchored = true): InboundMessage {
  const inThread = parentId !== undefined && parentId !== message.channelId;
  return {
    session: {
      platform: 'discord',
      chatId: inThread ? parentId : message.channelId,
      chatType: message.guildId === undefined ? 'dm' : 'channel',
      ...(inThread ? { threadId: message.channelId } : {}),
      userId: message.authorId,
      ...(message.authorName === undefined ? {} : { userName: message.authorName }),
      // A slash command is no message a reply could quote (`anchored` false).
      ...(anchored ? { messageId: message.id } : {}),
    },
    text: message.text,
  };
}

function mentionsBot(mentions: unknown, botId: string): boolean {
  return Array.isArray(mentions) && mentions.some((user) => record(user)?.['id'] === botId);
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
