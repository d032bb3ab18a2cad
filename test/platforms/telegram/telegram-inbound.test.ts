import { describe, expect, it } from 'vitest';
import { telegramInbound } from '../../../src/platforms/telegram/telegram-inbound.js';

const group = { id: -100123, type: 'supergroup', title: 'Team' };
const update = (message: Record<string, unknown>) => ({ update_id: 1, message: { message_id: 7, chat: group, text: '/sethome', ...message } });

describe('telegramInbound: who sent it', () => {
  it('takes the user id of a person', () => {
    expect(telegramInbound(update({ from: { id: 42, is_bot: false, first_name: 'Ann' } }))?.session.userId).toBe('42');
  });

  it.each([
    ['an anonymous group admin', { from: { id: 1087968824, is_bot: true, username: 'GroupAnonymousBot' }, sender_chat: group }],
    ['the anonymous-admin account without sender_chat', { from: { id: 1087968824, is_bot: true } }],
    ['a channel posting in the group', { from: { id: 136817688, is_bot: true, username: 'Channel_Bot' }, sender_chat: { id: -100999, type: 'channel' } }],
    ["a linked channel's post", { from: { id: 777000, is_bot: false, first_name: 'Telegram' } }],
  ])('names no user for %s: every such message shares the id, so it can name no admin', (_, message) => {
    const inbound = telegramInbound(update(message));
    expect(inbound?.session.chatId).toBe('-100123');
    expect(inbound?.session.userId).toBeUndefined();
  });
});

describe('telegramInbound: a pressed button', () => {
  const press = (query: Record<string, unknown>) => ({
    update_id: 2,
    callback_query: { id: 'q77', chat_instance: '1', from: { id: 42, is_bot: false, first_name: 'Ann' }, data: '/confirm ab12cd', message: { message_id: 9, date: 0, chat: group, message_thread_id: 5, is_topic_message: true, text: 'held' }, ...query },
  });

  it("posts the button's command in its chat and topic as the presser, under a message id of the press", () => {
    const inbound = telegramInbound(press({}));
    expect(inbound).toMatchObject({ text: '/confirm ab12cd', session: { chatId: '-100123', threadId: '5', userId: '42', messageId: 'press-q77' } });
  });

  it.each([
    ['data that is no command', { data: 'rm -rf' }],
    ['no data (a game button)', { data: undefined }],
    ['a query id that is not printable', { id: 'q 1\n' }],
    ['no message (an inline-mode button)', { message: undefined }],
  ])('ignores %s', (_, query) => {
    expect(telegramInbound(press(query))).toBeUndefined();
  });

  it('names no user for a press by a shared account', () => {
    expect(telegramInbound(press({ from: { id: 1087968824, is_bot: true } }))?.session.userId).toBeUndefined();
  });
});

describe('telegramInbound: text someone else wrote', () => {
  it.each([
    ['forwarded (forward_origin)', { forward_origin: { type: 'hidden_user', sender_user_name: 'x', date: 0 } }],
    ['forwarded (older fields)', { forward_from: { id: 9, is_bot: false, first_name: 'Stranger' }, forward_date: 0 }],
    ['sent through an inline bot', { via_bot: { id: 5, is_bot: true, first_name: 'bot' } }],
  ])('names no user when %s: the forwarder passes no rights to it', (_, extra) => {
    const inbound = telegramInbound(update({ from: { id: 42, is_bot: false, first_name: 'Ann' }, ...extra }));
    expect(inbound?.session.userId).toBeUndefined();
  });
});
