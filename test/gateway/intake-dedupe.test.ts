import { describe, expect, it } from 'vitest';
import type { SendResult, TestGateway, TestGatewayOptions } from '../../src/testing/index.js';
import { useTestGateways } from '../helpers/gateway.js';

const start = useTestGateways();

/** One platform's way to send a message by its platform id, and to read what went out. */
interface Sender {
  readonly options: TestGatewayOptions;
  send(g: TestGateway, messageId: number, text: string): Promise<SendResult>;
  /** How the platform's answer says "already taken". */
  duplicate(answer: SendResult): boolean;
  sent(g: TestGateway): Promise<string[]>;
}

const senders: Record<string, Sender> = {
  telegram: {
    options: { telegram: true },
    send: (g, messageId, text) =>
      g.sendTelegram({
        update_id: 500 + messageId,
        message: { message_id: messageId, date: 0, chat: { id: -100123, type: 'supergroup', title: 'T' }, from: { id: 7, is_bot: false, first_name: 'A' }, text },
      }),
    duplicate: (answer) => answer.body['duplicate'] === true,
    sent: async (g) => g.telegram!.sent.map((sent) => sent.text),
  },
  slack: {
    options: { slack: true },
    send: (g, messageId, text) =>
      g.sendSlack({
        type: 'event_callback',
        event_id: `Ev${messageId}`,
        event: { type: 'message', channel: 'C1', channel_type: 'channel', user: 'U1', text, ts: `1800000000.${String(messageId).padStart(6, '0')}` },
      }),
    duplicate: (answer) => answer.body['duplicate'] === true,
    sent: async (g) => g.slack!.sent.map((sent) => sent.text),
  },
  webhook: {
    options: {},
    send: (g, messageId, text) => g.send({ chat_id: 'c:1', message_id: String(messageId), text }),
    duplicate: (answer) => answer.headers.get('idempotent-replayed') === 'true',
    sent: async (g) => g.receiver.received.map((received) => received.body.text),
  },
};

/** Waits for `count` replies; a later, distinct message of the same chat runs behind any duplicate turn. */
async function repliesAfterOneMore(sender: Sender, g: TestGateway): Promise<string[]> {
  await sender.send(g, 99, 'after');
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 10))) {
    const sent = await sender.sent(g);
    if (sent.includes('after')) return sent;
  }
  throw new Error(`no reply to the last message; sent: ${(await sender.sent(g)).join(', ')}`);
}

describe.each(Object.entries(senders))('durable intake dedupe: %s', (_name, sender) => {
  it('takes a message redelivered after a restart once: the same answer, one turn', async () => {
    const g = await start(sender.options);
    const first = await sender.send(g, 1, 'hello');
    expect(first.status).toBeLessThan(300);
    await g.restart();
    const again = await sender.send(g, 1, 'hello');
    expect(again.status).toBe(first.status);
    expect(sender.duplicate(again)).toBe(true);
    expect(await repliesAfterOneMore(sender, g)).toEqual(['hello', 'after']);
  });
});

describe('webhook retries', () => {
  it('answers a retried message_id with its first 202 body, and runs it once', async () => {
    const g = await start();
    const first = await g.send({ chat_id: 'c:1', message_id: 'm-1', text: 'once' });
    const again = await g.send({ chat_id: 'c:1', message_id: 'm-1', text: 'once' });
    expect(first.status).toBe(202);
    expect(again.status).toBe(202);
    expect(again.body).toEqual(first.body);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await repliesAfterOneMore(senders['webhook']!, g)).toEqual(['once', 'after']);
  });

  it('keys on the Idempotency-Key header when the client sends one, also for concurrent retries', async () => {
    const g = await start();
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => g.send({ chat_id: 'c:1', text: 'retried' }, { 'idempotency-key': 'order-42' })),
    );
    expect(new Set(answers.map((answer) => JSON.stringify(answer.body))).size).toBe(1);
    expect(answers.filter((answer) => answer.headers.get('idempotent-replayed') === 'true')).toHaveLength(4);
    const other = await g.send({ chat_id: 'c:1', text: 'another' }, { 'idempotency-key': 'order-43' });
    expect(other.body['message_id']).not.toBe(answers[0]!.body['message_id']);
  });

  it('keeps an Idempotency-Key to its chat: another chat with the same key is a message of its own', async () => {
    const g = await start();
    const alice = await g.send({ chat_id: 'alice', text: 'transfer 10' }, { 'idempotency-key': '1' });
    const bob = await g.send({ chat_id: 'bob', text: 'hello' }, { 'idempotency-key': '1' });
    expect(bob.status).toBe(202);
    expect(bob.body['message_id']).not.toBe(alice.body['message_id']);
    expect((await g.receiver.waitFor(2)).map((d) => d.body.text).sort()).toEqual(['hello', 'transfer 10']);
  });

  it('refuses a different message under a key already used in the chat with 422, and runs nothing for it', async () => {
    const g = await start();
    await g.send({ chat_id: 'c', message_id: 'm-1', text: 'first' });
    const reused = await g.send({ chat_id: 'c', message_id: 'm-1', text: 'something else' });
    expect(reused.status).toBe(422);
    expect(reused.body['code']).toBe('TL_IDEMPOTENCY_CONFLICT');
    expect(await repliesAfterOneMore(senders['webhook']!, g)).toEqual(['first', 'after']);
  });

  it('tells messages with the same message_id in different chats apart', async () => {
    const g = await start();
    const a = await g.send({ chat_id: 'a', message_id: '1', text: 'x' });
    const b = await g.send({ chat_id: 'b', message_id: '1', text: 'x' });
    expect(a.body['message_id']).not.toBe(b.body['message_id']);
    await g.receiver.waitFor(2);
  });

  it('refuses an Idempotency-Key it cannot keep with a 400 naming the header', async () => {
    const g = await start();
    const answer = await g.send({ chat_id: 'c', text: 'x' }, { 'idempotency-key': 'k'.repeat(257) });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ code: 'TL_BAD_REQUEST' });
    expect(String(answer.body['error'])).toContain('Idempotency-Key');
  });
});
