import { DiscordAPIError, type REST } from '@discordjs/rest';
import { ChannelType, Routes, type APIChannel } from 'discord-api-types/v10';
import { LRUCache } from 'lru-cache';
import { isSnowflake } from './discord-inbound.js';

/** Channels whose kind is remembered; a forgotten one is asked again. */
const CHANNELS_REMEMBERED = 10_000;
const THREAD_TYPES: ReadonlySet<ChannelType> = new Set([ChannelType.PublicThread, ChannelType.PrivateThread, ChannelType.AnnouncementThread]);
/** No parent: the channel is no thread. */
const NONE = '';

/**
 * Which channels are threads, and of which channel: a message names only the channel it was
 * written in, and a thread is a channel of its own. Asked once per channel (GET
 * /channels/{id}, which needs no intent beyond the ones the bot has) and remembered: a
 * thread never moves to another channel.
 */
export class DiscordThreads {
  private readonly parents = new LRUCache<string, string>({ max: CHANNELS_REMEMBERED });

  constructor(private readonly rest: REST) {}

  /**
   * The channel that thread `channelId` belongs to; undefined when it is no thread, or when
   * Discord will not say (a 4xx: sent to the channel itself, a reply still lands where the
   * message was). Rate limits, Discord's trouble and the network throw, to be tried again.
   */
  async parentOf(channelId: string, signal?: AbortSignal): Promise<string | undefined> {
    const known = this.parents.get(channelId);
    if (known !== undefined) return known === NONE ? undefined : known;
    let parent = NONE;
    try {
      const channel = (await this.rest.get(Routes.channel(channelId), signal === undefined ? {} : { signal })) as APIChannel;
      if (THREAD_TYPES.has(channel.type) && 'parent_id' in channel && isSnowflake(channel.parent_id)) parent = channel.parent_id;
    } catch (error) {
      if (!(error instanceof DiscordAPIError) || error.status === 429 || error.status >= 500) throw error;
    }
    this.parents.set(channelId, parent);
    return parent === NONE ? undefined : parent;
  }

  /**
   * Opens a thread from message `messageId` of `channelId` and resolves its id, which Discord
   * gives the message's own id: asked again (a retry, a replay) it finds the thread made before.
   */
  async startFrom(channelId: string, messageId: string, name: string, signal?: AbortSignal): Promise<string> {
    try {
      await this.rest.post(Routes.threads(channelId, messageId), {
        body: { name: name.slice(0, 100) || 'thread', auto_archive_duration: 1440 },
        ...(signal === undefined ? {} : { signal }),
      });
    } catch (error) {
      if (!(error instanceof DiscordAPIError) || error.code !== THREAD_ALREADY_CREATED) throw error;
    }
    this.parents.set(messageId, channelId);
    return messageId;
  }
}

/** Discord's "A thread has already been created for this message". */
const THREAD_ALREADY_CREATED = 160004;
