import { describe, expect, it } from 'vitest';
import { matrixInbound, withoutReplyFallback } from '../../../src/platforms/matrix/matrix-inbound.js';

const BOT = '@threadline:example.org';
const ROOM = '!abc:example.org';

function message(content: Record<string, unknown>, overrides: Record<string, unknown> = {}) {
  return { type: 'm.room.message', event_id: '$ev1', sender: '@ann:example.org', origin_server_ts: 1, content, ...overrides };
}

describe('matrixInbound', () => {
  it('takes a person\'s text in a thread with the thread root as the thread id, the event as the message id', () => {
    const outcome = matrixInbound(ROOM, message({ msgtype: 'm.text', body: 'in thread', 'm.relates_to': { rel_type: 'm.thread', event_id: '$root', is_falling_back: true, 'm.in_reply_to': { event_id: '$prev' } } }), BOT);
    expect(outcome).toEqual({
      kind: 'message',
      message: { session: { platform: 'matrix', chatId: ROOM, chatType: 'group', threadId: '$root', userId: '@ann:example.org', userName: 'ann', messageId: '$ev1' }, text: 'in thread' },
    });
  });

  it('takes a top-level message, and a plain reply, without a thread; the reply without the quote older clients put first', () => {
    const top = matrixInbound(ROOM, message({ msgtype: 'm.text', body: 'hello' }), BOT);
    expect(top.kind === 'message' && top.message.session.threadId).toBe(undefined);
    const reply = matrixInbound(ROOM, message({ msgtype: 'm.text', body: '> <@bob:example.org> question\n> more\n\nanswer', 'm.relates_to': { 'm.in_reply_to': { event_id: '$q' } } }), BOT);
    expect(reply).toMatchObject({ kind: 'message', message: { text: 'answer' } });
    expect(reply.kind === 'message' && reply.message.session.threadId).toBe(undefined);
  });

  it('says an encrypted event is one, so it is refused aloud', () => {
    expect(matrixInbound(ROOM, { type: 'm.room.encrypted', event_id: '$enc', sender: '@ann:example.org', content: { algorithm: 'm.megolm.v1.aes-sha2', ciphertext: 'x' } }, BOT)).toEqual({ kind: 'encrypted', eventId: '$enc' });
  });

  it.each([
    ['the bot\'s own message', message({ msgtype: 'm.text', body: 'mine' }, { sender: BOT })],
    ['a notice (what bots send)', message({ msgtype: 'm.notice', body: 'beep' })],
    ['an edit', message({ msgtype: 'm.text', body: '* fixed', 'm.new_content': { msgtype: 'm.text', body: 'fixed' }, 'm.relates_to': { rel_type: 'm.replace', event_id: '$ev0' } })],
    ['an image', message({ msgtype: 'm.image', body: 'cat.png', url: 'mxc://x/y' })],
    ['a redacted message', message({})],
    ['a state event', { type: 'm.room.message', event_id: '$s', sender: '@ann:example.org', state_key: '', content: { msgtype: 'm.text', body: 'x' } }],
    ['another event type', { type: 'm.reaction', event_id: '$r', sender: '@ann:example.org', content: {} }],
    ['an event id that is none', message({ msgtype: 'm.text', body: 'x' }, { event_id: 'ev1' })],
    ['a sender that is none', message({ msgtype: 'm.text', body: 'x' }, { sender: 'ann' })],
    ['a body that is not text', message({ msgtype: 'm.text', body: 42 })],
    ['only whitespace', message({ msgtype: 'm.text', body: '  \n' })],
    ['not an object', 'event'],
  ])('ignores %s', (_name, event) => {
    expect(matrixInbound(ROOM, event, BOT).kind).toBe('ignored');
  });

  it('keeps a thread relation whose root is no event id out of the routing', () => {
    const outcome = matrixInbound(ROOM, message({ msgtype: 'm.text', body: 'x', 'm.relates_to': { rel_type: 'm.thread', event_id: 'root' } }), BOT);
    expect(outcome.kind === 'message' && outcome.message.session.threadId).toBe(undefined);
  });
});

describe('withoutReplyFallback', () => {
  it('drops the leading quote and the empty line after it, and keeps a text without one', () => {
    expect(withoutReplyFallback('> <@a:x> q\n\nanswer\n> not a quote')).toBe('answer\n> not a quote');
    expect(withoutReplyFallback('plain\n> later')).toBe('plain\n> later');
  });
});
