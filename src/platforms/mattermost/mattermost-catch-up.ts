import type { MattermostClient } from './mattermost-client.js';
import type { MattermostChannelInfo } from './mattermost-inbound.js';

/** A post found by the catch-up, with what its channel is. */
export interface FoundPost {
  readonly post: Record<string, unknown>;
  readonly channel: MattermostChannelInfo;
}

/** The most posts one `posts?since=` answer holds: more were posted than one call returns. */
export const POSTS_SINCE_LIMIT = 1_000;

/**
 * The posts created at `since` (server time, ms) or later in every channel the bot is a member
 * of, oldest first: what the websocket did not bring while it was down. The channel listing
 * (per team, direct and group messages included) says which channels had a post since then,
 * and only those are asked. `truncated` names channels that answered the most posts one call
 * returns, where older ones may be missing.
 */
export async function postsSince(client: MattermostClient, since: number): Promise<{ readonly posts: FoundPost[]; readonly truncated: string[] }> {
  const teams = await client.getMyTeams();
  const channels = new Map<string, Record<string, unknown>>();
  for (const team of teams) {
    for (const channel of await client.getMyChannels(team.id)) channels.set(channel.id, channel as unknown as Record<string, unknown>);
  }
  const posts: FoundPost[] = [];
  const truncated: string[] = [];
  for (const [id, channel] of channels) {
    if (typeof channel['last_post_at'] === 'number' && channel['last_post_at'] < since) continue;
    const list = await client.getPostsSince(id, since, false);
    const found = Object.values(list.posts ?? {}) as unknown as Record<string, unknown>[];
    if (found.length >= POSTS_SINCE_LIMIT) truncated.push(id);
    const info = { type: channel['type'], displayName: channel['display_name'] };
    for (const post of found) {
      // `since` selects posts changed since then: an old post edited meanwhile is no new message.
      if (typeof post['create_at'] === 'number' && post['create_at'] >= since) posts.push({ post, channel: info });
    }
  }
  posts.sort((a, b) => (a.post['create_at'] as number) - (b.post['create_at'] as number));
  return { posts, truncated };
}
