import { describe, expect, it } from 'vitest';
import { discordInbound, takenMessage } from '../../../src/platforms/discord/discord-inbound.js';

const BOT = '900000000000000001';
const message = (fields: Record<string, unknown>) => ({
  id: '1100000000000000001',
  channel_id: '300000000000000001',
  guild_id: '200000000000000001',
  type: 0,
  author: { id: '400000000000000001', username: 'ann', global_name: 'Ann' },
  content: `<@${BOT}> hello`,
  mentions: [{ id: BOT }],
  ...fields,
});

describe('takenMessage: what the bot answers', () => {
  it('takes a server message that mentions the bot, without the mention', () => {
    expect(takenMessage(message({}), BOT)).toMatchObject({ text: 'hello', channelId: '300000000000000001', guildId: '200000000000000001', authorName: 'Ann' });
    expect(takenMessage(message({ content: `hi <@!${BOT}>`, mentions: [] }), BOT)?.text).toBe('hi');
  });

  it('takes every direct message', () => {
    expect(takenMessage(message({ guild_id: undefined, content: 'plain', mentions: [] }), BOT)?.text).toBe('plain');
  });

  it.each([
    ['a server message that does not mention the bot', { content: 'hello all', mentions: [] }],
    ['an @everyone', { content: '@everyone hello', mentions: [], mention_everyone: true }],
    ["the bot's own message", { author: { id: BOT, username: 'bot', bot: true } }],
    ["another bot's message", { author: { id: '400000000000000002', username: 'b', bot: true } }],
    ["a webhook's message", { webhook_id: '500000000000000001' }],
    ['a system message (a pin)', { type: 6 }],
    ['a bare mention', { content: `<@${BOT}>` }],
    ['a channel id that is no snowflake', { channel_id: '../users/@me' }],
    ['a message with no content field', { content: undefined }],
  ])('skips %s', (_, fields) => {
    expect(takenMessage(message(fields), BOT)).toBeUndefined();
  });
});

describe('discordInbound: where it came from', () => {
  const taken = takenMessage(message({}), BOT)!;

  it('is the channel itself when it is no thread', () => {
    expect(discordInbound(taken, undefined).session).toEqual({
      platform: 'discord',
      chatId: '300000000000000001',
      chatType: 'channel',
      userId: '400000000000000001',
      userName: 'Ann',
      messageId: '1100000000000000001',
    });
  });

  it('is the parent channel and the thread for a message written in a thread', () => {
    expect(discordInbound(taken, '300000000000000009').session).toMatchObject({ chatId: '300000000000000009', threadId: '300000000000000001', chatType: 'channel' });
  });

  it('is a dm for a direct message', () => {
    const dm = takenMessage(message({ guild_id: undefined }), BOT)!;
    expect(discordInbound(dm, undefined).session).toMatchObject({ chatType: 'dm', chatId: '300000000000000001' });
    expect(discordInbound(dm, undefined).session.threadId).toBeUndefined();
  });
});
