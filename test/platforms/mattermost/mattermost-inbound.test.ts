import { describe, expect, it } from 'vitest';
import { mattermostInbound } from '../../../src/platforms/mattermost/mattermost-inbound.js';
import { fakeMattermostId } from '../../../src/testing/index.js';

const bot = fakeMattermostId('bot', 1);
const ann = fakeMattermostId('user', 1);
const channel = fakeMattermostId('c', 1);
const root = fakeMattermostId('t', 1);
const options = { botUserId: bot, threadTopLevel: false };
const post = (fields: Record<string, unknown> = {}) => ({
  id: fakeMattermostId('p', 1),
  channel_id: channel,
  user_id: ann,
  root_id: '',
  message: 'hello',
  type: '',
  delete_at: 0,
  props: {},
  ...fields,
});

describe('mattermostInbound', () => {
  it.each([
    ['D', 'dm'],
    ['G', 'group'],
    ['P', 'group'],
    ['O', 'channel'],
  ])('takes channel type %s as a %s', (type, chatType) => {
    expect(mattermostInbound(post(), { type }, options)?.session.chatType).toBe(chatType);
  });

  it('routes a reply to its thread, the root post id', () => {
    const inbound = mattermostInbound(post({ root_id: root }), { type: 'O', displayName: 'Town Square' }, options, '@ann');
    expect(inbound).toEqual({
      session: { platform: 'mattermost', chatId: channel, chatType: 'channel', chatName: 'Town Square', threadId: root, userId: ann, userName: 'ann', messageId: post().id },
      text: 'hello',
    });
  });

  it('answers a top-level post in the channel, or in a thread rooted at it when asked', () => {
    expect(mattermostInbound(post(), { type: 'O' }, options)?.session.threadId).toBeUndefined();
    expect(mattermostInbound(post(), { type: 'O' }, { ...options, threadTopLevel: true })?.session.threadId).toBe(post().id);
  });

  it.each([
    ["the bot's own post", { user_id: bot }],
    ["another bot's post", { props: { from_bot: 'true' } }],
    ["an integration's post", { props: { from_webhook: 'true' } }],
    ['a system message', { type: 'system_join_channel' }],
    ['a deleted post', { delete_at: 5 }],
    ['a post with only a file', { message: '  ' }],
    ['an id that is no Mattermost id', { id: 'not-an-id' }],
    ['a thread id that is no post id', { root_id: 'C1234' }],
    ['a message that is no text', { message: 42 }],
  ])('takes no message from %s', (_, fields) => {
    expect(mattermostInbound(post(fields), { type: 'O' }, options)).toBeUndefined();
  });

  it('takes nothing from a channel of an unknown type, or from what is no post', () => {
    expect(mattermostInbound(post(), { type: 'X' }, options)).toBeUndefined();
    expect(mattermostInbound('a post', { type: 'O' }, options)).toBeUndefined();
    expect(mattermostInbound(null, { type: 'O' }, options)).toBeUndefined();
  });
});
