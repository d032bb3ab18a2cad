import type { ChatType } from '../../session/index.js';
import { displayName } from '../display-name.js';
import type { InboundMessage } from '../platform.js';
import { MATTERMOST_ID } from './mattermost-client.js';

/** Mattermost's channel types: D a direct message, G a group message, P private, O public. */
const CHAT_TYPES: Readonly<Record<string, ChatType>> = { D: 'dm', G: 'group', P: 'group', O: 'channel' };

/** What the channel of a post is, as the `posted` event or the channel listing tells. */
export interface MattermostChannelInfo {
  /** D, G, P or O. */
  readonly type: unknown;
  readonly displayName?: unknown;
}

export interface MattermostInboundOptions {
  /** The bot's own user id: its posts are never messages. */
  readonly botUserId: string;
  /** Answer a top-level post in a thread rooted at it. */
  readonly threadTopLevel: boolean;
}

/**
 * The InboundMessage of a Mattermost post, or undefined for posts that are no person's text:
 * the bot's own, other bots' and integrations' (`from_bot`, `from_webhook`), system messages
 * (a `type`), deleted ones, and posts without text. `root_id` is the thread id; with
 * `threadTopLevel` a top-level post starts a thread of its own (its id), so the answer does
 * not land in the channel. The post is untrusted input: every field is checked before use.
 */
export function mattermostInbound(
  post: unknown,
  channel: MattermostChannelInfo,
  options: MattermostInboundOptions,
  senderName?: unknown,
): InboundMessage | undefined {
  const p = record(post);
  if (p === undefined) return undefined;
  const { id, channel_id: channelId, user_id: userId, root_id: rootId, message } = p;
  if (!isId(id) || !isId(channelId) || !isId(userId) || typeof message !== 'string') return undefined;
  if (userId === options.botUserId || (p['type'] !== '' && p['type'] !== undefined) || (p['delete_at'] !== 0 && p['delete_at'] !== undefined)) return undefined;
  const props = record(p['props']);
  if (isTrue(props?.['from_bot']) || isTrue(props?.['from_webhook'])) return undefined;
  if (message.trim() === '') return undefined;
  const chatType = typeof channel.type === 'string' ? CHAT_TYPES[channel.type] : undefined;
  if (chatType === undefined) return undefined;
  if (rootId !== '' && rootId !== undefined && !isId(rootId)) return undefined;
  const threadId = isId(rootId) ? rootId : options.threadTopLevel ? id : undefined;
  const chatName = displayName(channel.displayName);
  const userName = displayName(typeof senderName === 'string' ? senderName.replace(/^@/, '') : undefined);
  return {
    session: {
      platform: 'mattermost',
      chatId: channelId,
      chatType,
      ...(chatName === undefined ? {} : { chatName }),
      ...(threadId === undefined ? {} : { threadId }),
      userId,
      ...(userName === undefined ? {} : { userName }),
      messageId: id,
    },
    text: message,
  };
}

/** `from_bot` is the string "true" on posts from the server, a boolean from some plugins. */
function isTrue(value: unknown): boolean {
  return value === true || value === 'true';
}

function isId(value: unknown): value is string {
  return typeof value === 'string' && MATTERMOST_ID.test(value);
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
