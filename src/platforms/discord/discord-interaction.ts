import { ChannelType, InteractionType } from 'discord-api-types/v10';
import { displayName } from '../display-name.js';
import { isSnowflake } from './discord-inbound.js';

const THREAD_TYPES: ReadonlySet<unknown> = new Set([ChannelType.PublicThread, ChannelType.PrivateThread, ChannelType.AnnouncementThread]);
/** The command whose text is the message itself: `/ask text: …` is "…". */
export const ASK_COMMAND = 'ask';
/** Option types that hold a value (string, integer, boolean, user, channel, role, mentionable, number). */
const VALUE_OPTIONS: ReadonlySet<unknown> = new Set([3, 4, 5, 6, 7, 8, 9, 10]);

/** A slash command or a button press as the gateway takes it: its text, and where and by whom it was used. */
export interface DiscordCommand {
  readonly id: string;
  readonly text: string;
  /** The channel it was used in: a thread's own channel in a thread. */
  readonly channelId: string;
  readonly guildId: string | undefined;
  /** The thread's channel, when the interaction says the channel is a thread; undefined when it does not say. */
  readonly parentId: string | undefined;
  readonly known: boolean;
  readonly authorId: string;
  readonly authorName: string | undefined;
  /** The interaction's token, for an answer over the REST API (a route holding it: a secret for 15 minutes). */
  readonly token: string | undefined;
}

/**
 * What an interaction asks for: a PING (answered PONG), a slash command, a button press, or
 * nothing the gateway takes.
 */
export type DiscordInteraction =
  | { readonly kind: 'ping' }
  | ({ readonly kind: 'command' } & DiscordCommand)
  | ({ readonly kind: 'press' } & DiscordCommand)
  | { readonly kind: 'other' };

/** Interaction tokens: base64url-like, never a path separator. */
const INTERACTION_TOKEN = /^[\w.-]{1,512}$/;

/**
 * The interaction in an Interactions endpoint body or an INTERACTION_CREATE. A slash command
 * becomes text: `/ask`'s values alone, any other command `/<name> <values…>` (so `/stop` and
 * `/new` reach the gateway's own commands); a button press, the command its custom_id holds.
 * Untrusted: every field is checked before it is read.
 */
export function discordInteraction(body: unknown): DiscordInteraction {
  const interaction = record(body);
  if (interaction?.['type'] === InteractionType.Ping) return { kind: 'ping' };
  const data = record(interaction?.['data']);
  const user = record(record(interaction?.['member'])?.['user']) ?? record(interaction?.['user']);
  const { id, channel_id: channelId, guild_id: guildId, token } = interaction ?? {};
  if (interaction === undefined || data === undefined || user === undefined) return { kind: 'other' };
  if (!isSnowflake(id) || !isSnowflake(channelId) || !isSnowflake(user['id'])) return { kind: 'other' };
  if (guildId !== undefined && !isSnowflake(guildId)) return { kind: 'other' };
  let text: string;
  if (interaction['type'] === InteractionType.ApplicationCommand && typeof data['name'] === 'string') {
    const values = optionValues(data['options']);
    text = (data['name'] === ASK_COMMAND ? values : [`/${data['name']}`, ...values]).join(' ').trim();
  } else if (interaction['type'] === InteractionType.MessageComponent && typeof data['custom_id'] === 'string' && data['custom_id'].startsWith('/')) {
    text = data['custom_id'].trim();
  } else {
    return { kind: 'other' };
  }
  if (text === '') return { kind: 'other' };
  const channel = record(interaction['channel']);
  const isThread = channel !== undefined && THREAD_TYPES.has(channel['type']);
  const command: DiscordCommand = {
    id,
    text,
    channelId,
    guildId,
    parentId: isThread && isSnowflake(channel['parent_id']) ? channel['parent_id'] : undefined,
    // The channel's type was told: a channel that is no thread needs no lookup.
    known: channel !== undefined && typeof channel['type'] === 'number',
    authorId: user['id'] as string,
    authorName: displayName(user['global_name'] ?? user['username']),
    token: typeof token === 'string' && INTERACTION_TOKEN.test(token) ? token : undefined,
  };
  return { kind: interaction['type'] === InteractionType.ApplicationCommand ? 'command' : 'press', ...command };
}

/** The values of a command's options, subcommands' included, in order. */
function optionValues(options: unknown, depth = 0): string[] {
  if (!Array.isArray(options) || depth > 2) return [];
  return options.flatMap((option) => {
    const entry = record(option);
    if (entry === undefined) return [];
    if (Array.isArray(entry['options'])) return [String(entry['name'] ?? ''), ...optionValues(entry['options'], depth + 1)];
    const value = entry['value'];
    return VALUE_OPTIONS.has(entry['type']) && (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') ? [String(value)] : [];
  });
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
