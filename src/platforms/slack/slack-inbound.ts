import type { ChatType } from '../../session/index.js';
import type { InboundMessage } from '../platform.js';

const CHAT_TYPES: Record<string, ChatType> = { im: 'dm', mpim: 'group', group: 'group', channel: 'channel' };
/** Subtypes that are still a person writing: a thread reply also sent to the channel, a file with a message. */
const PERSON_SUBTYPES: ReadonlySet<string> = new Set(['thread_broadcast', 'file_share']);

/**
 * The InboundMessage of a Slack Events API event, or undefined for events that are not a
 * person's text (bot messages, edits, joins; a broadcast thread reply or a file with text is). `thread_ts` is the thread id; with
 * `threadTopLevel` a top-level message starts a thread of its own (its `ts`), so the reply
 * does not land in the channel. Reads only fields it checks: the body is untrusted.
 * `knownType` answers the chat type seen earlier for a channel.
 */
export function slackInbound(
  event: unknown,
  threadTopLevel: boolean,
  knownType: (channel: string) => ChatType | undefined = () => undefined,
): InboundMessage | undefined {
  if (typeof event !== 'object' || event === null) return undefined;
  const e = event as Record<string, unknown>;
  if (e['type'] !== 'message' && e['type'] !== 'app_mention') return undefined;
  if (e['bot_id'] !== undefined || (e['subtype'] !== undefined && !PERSON_SUBTYPES.has(e['subtype'] as string))) return undefined;
  const { channel, ts, text, user } = e;
  if (!isText(channel) || !isText(ts) || !isText(text)) return undefined;
  const threadTs = isText(e['thread_ts']) ? e['thread_ts'] : threadTopLevel ? ts : undefined;
  // app_mention carries no channel_type: take the one a message event showed for this
  // channel, else the id's prefix, so both events of one channel share a session.
  const chatType =
    typeof e['channel_type'] === 'string' ? CHAT_TYPES[e['channel_type']] ?? 'channel' : knownType(channel) ?? typeFromId(channel);
  return {
    session: {
      platform: 'slack',
      chatId: channel,
      chatType,
      ...(threadTs === undefined ? {} : { threadId: threadTs }),
      ...(isText(user) ? { userId: user } : {}),
      messageId: ts,
    },
    text,
  };
}

/** The action_id of a CommandButton's button: its press posts the button's value as a command. */
export const SLACK_COMMAND_ACTION = 'threadline_command';

/**
 * A press of a CommandButton (a block_actions interaction): the button's command posted in its
 * channel and thread as the user who pressed it, whom Slack names in the signed payload. Its
 * message id is the press's (`press-<action_ts>`), so each press is a message of its own.
 */
export function slackButtonPress(payload: unknown, knownType: (channel: string) => ChatType | undefined = () => undefined): InboundMessage | undefined {
  const p = record(payload);
  if (p?.['type'] !== 'block_actions' || !Array.isArray(p['actions'])) return undefined;
  const action = (p['actions'] as unknown[]).map(record).find((candidate) => candidate?.['action_id'] === SLACK_COMMAND_ACTION);
  const command = action?.['value'];
  const pressedAt = action?.['action_ts'];
  const user = record(p['user'])?.['id'];
  const channel = record(p['channel'])?.['id'];
  if (!isText(command) || !command.startsWith('/') || !isText(pressedAt) || !isText(user) || !isText(channel)) return undefined;
  // The button's own thread: a top-level message that others replied to carries thread_ts = its ts, and is in no thread.
  const message = record(p['message']);
  const threadTs = record(p['container'])?.['thread_ts'] ?? (message?.['thread_ts'] !== message?.['ts'] ? message?.['thread_ts'] : undefined);
  return {
    session: {
      platform: 'slack',
      chatId: channel,
      chatType: knownType(channel) ?? typeFromId(channel),
      ...(isText(threadTs) ? { threadId: threadTs } : {}),
      userId: user,
      messageId: `press-${pressedAt}`,
    },
    text: command,
  };
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function typeFromId(channel: string): ChatType {
  return channel.startsWith('D') ? 'dm' : channel.startsWith('G') ? 'group' : 'channel';
}

function isText(value: unknown): value is string {
  return typeof value === 'string' && value !== '';
}
