import { describe, expect, it } from 'vitest';
import type { AcceptChecks, StoredMessage } from '../../../src/store/store.js';
import { useRedis } from '../../helpers/redis.js';
import { chat, routingOf } from '../store.fixture.js';
import { useRedisStores } from './redis-store.fixture.js';

const redis = useRedis();
const openStore = useRedisStores(redis);

function message(id: string, receivedAt = 1, chatId = 'c:1'): StoredMessage {
  return { id, routing: routingOf(chatId), text: `text of ${id}`, receivedAt };
}
const ROOMY: AcceptChecks = { destination: chat('c:1'), maxOpenPerDestination: 1_000, maxOpenTotal: 1_000 };
const ids = (messages: readonly StoredMessage[]) => messages.map((stored) => stored.id);

describe('RedisStore messages', () => {
  it('keeps accepted messages until completed, oldest first, ties by id', async () => {
    const { store } = openStore();
    for (const stored of [message('m-3', 20), message('m-2', 10), message('m-1', 10)]) {
      expect(await store.messages.accept(stored, ROOMY)).toEqual({ status: 'accepted' });
    }
    expect(await store.messages.pending()).toEqual([message('m-1', 10), message('m-2', 10), message('m-3', 20)]);
    await store.messages.complete('m-2');
    await store.messages.complete('never-there');
    expect(ids(await store.messages.pending())).toEqual(['m-1', 'm-3']);
  });

  it('answers a seen key with its first answer without appending, and keeps the key until it expires', async () => {
    const { store, keys, redis: connection } = openStore();
    const expiresAt = Date.now() + 60_000;
    const checks = { ...ROOMY, idempotency: { key: 'update:1', answer: 'first', expiresAt } };
    expect(await store.messages.accept(message('m-1'), checks)).toEqual({ status: 'accepted' });
    expect(await store.messages.accept(message('m-2'), { ...checks, idempotency: { ...checks.idempotency, answer: 'second' } })).toEqual({
      status: 'duplicate',
      answer: 'first',
    });
    expect(ids(await store.messages.pending())).toEqual(['m-1']);
    // Redis forgets it at expiresAt: memory stays bounded however many keys arrive.
    const expiry = await connection.pexpiretime(keys.key('intake', 'update:1'));
    expect(expiry).toBe(expiresAt);
    // A key already expired is not remembered at all.
    await store.messages.accept(message('m-3'), { ...ROOMY, idempotency: { key: 'old', answer: 'x', expiresAt: Date.now() - 1 } });
    expect(await connection.exists(keys.key('intake', 'old'))).toBe(0);
    expect(await store.messages.accept(message('m-4'), { ...ROOMY, idempotency: { key: 'old', answer: 'y', expiresAt: Date.now() - 1 } })).toEqual({
      status: 'accepted',
    });
  });

  it('a duplicate of a message still waiting carries it, to hand it over again; an accept run twice is accepted, not its own duplicate', async () => {
    const { store } = openStore();
    const expiresAt = Date.now() + 60_000;
    const answerOf = (id: string) => JSON.stringify({ messageId: id, sessionId: 's', traceId: 't' });
    const checks = (id: string) => ({ ...ROOMY, idempotency: { key: 'update:7', answer: answerOf(id), expiresAt } });
    expect(await store.messages.accept(message('m-1'), checks('m-1'))).toEqual({ status: 'accepted' });
    // The same accept again (its reply lost, the command sent anew) finds its own answer.
    expect(await store.messages.accept(message('m-1'), checks('m-1'))).toEqual({ status: 'accepted' });
    expect(await store.messages.accept(message('m-2'), checks('m-2'))).toEqual({ status: 'duplicate', answer: answerOf('m-1'), waiting: message('m-1') });
    await store.messages.complete('m-1');
    expect(await store.messages.accept(message('m-3'), checks('m-3'))).toEqual({ status: 'duplicate', answer: answerOf('m-1') });
    expect(ids(await store.messages.pending())).toEqual([]);
  });

  it('counts messages waiting for their turn toward their chat\'s cap, and the message of a full chat is not appended', async () => {
    const { store } = openStore();
    const checks = { destination: chat('c'), maxOpenPerDestination: 2, maxOpenTotal: 100 };
    expect(await store.messages.accept(message('m-1'), checks)).toEqual({ status: 'accepted' });
    expect(await store.messages.accept(message('m-2'), checks)).toEqual({ status: 'accepted' });
    expect(await store.messages.accept(message('m-3'), checks)).toEqual({ status: 'full', scope: 'destination', open: 2 });
    expect(await store.messages.accept(message('m-4'), { ...checks, destination: chat('other') })).toEqual({ status: 'accepted' });
    await store.messages.complete('m-1');
    expect(await store.messages.accept(message('m-5'), checks)).toEqual({ status: 'accepted' });
    expect(ids(await store.messages.pending())).toEqual(['m-2', 'm-4', 'm-5']);
  });

  it('counts the chat\'s open deliveries with its waiting messages, as the outbox counts them', async () => {
    const { store, keys, redis: connection } = openStore();
    await connection.hset(keys.openDeliveries, keys.openField(chat('c', 't')), 2);
    const checks = { destination: chat('c', 't'), maxOpenPerDestination: 3, maxOpenTotal: 100 };
    expect(await store.messages.accept(message('m-1'), checks)).toEqual({ status: 'accepted' });
    expect(await store.messages.accept(message('m-2'), checks)).toEqual({ status: 'full', scope: 'destination', open: 3 });
    // The chat without the thread is another destination.
    expect(await store.messages.accept(message('m-3'), { ...checks, destination: chat('c') })).toEqual({ status: 'accepted' });
  });

  it('caps all open deliveries, not the messages waiting for their turn', async () => {
    const { store, keys, redis: connection } = openStore();
    const checks = (chatId: string) => ({ destination: chat(chatId), maxOpenPerDestination: 10, maxOpenTotal: 1 });
    expect(await store.messages.accept(message('m-1'), checks('a'))).toEqual({ status: 'accepted' });
    expect(await store.messages.accept(message('m-2'), checks('a'))).toEqual({ status: 'accepted' });
    await connection.set(keys.openDeliveriesTotal, 1);
    expect(await store.messages.accept(message('m-3'), checks('c'))).toEqual({ status: 'full', scope: 'total', open: 1 });
    await connection.set(keys.openDeliveriesTotal, 0);
    expect(await store.messages.accept(message('m-4'), checks('c'))).toEqual({ status: 'accepted' });
    expect(ids(await store.messages.pending())).toEqual(['m-1', 'm-2', 'm-4']);
  });

  it('refuses past maxPendingMessages across every chat, and not when it is unset', async () => {
    const { store } = openStore();
    const checks = (chatId: string) => ({ destination: chat(chatId), maxOpenPerDestination: 10, maxOpenTotal: 10, maxPendingMessages: 2 });
    expect(await store.messages.accept(message('m-1'), checks('a'))).toEqual({ status: 'accepted' });
    expect(await store.messages.accept(message('m-2'), checks('b'))).toEqual({ status: 'accepted' });
    expect(await store.messages.accept(message('m-3'), checks('c'))).toEqual({ status: 'full', scope: 'messages', open: 2 });
    const { maxPendingMessages: _unset, ...unbounded } = checks('c');
    expect(await store.messages.accept(message('m-4'), unbounded)).toEqual({ status: 'accepted' });
    await store.messages.complete('m-1');
    await store.messages.complete('m-4');
    expect(await store.messages.accept(message('m-5'), checks('c'))).toEqual({ status: 'accepted' });
  });

  it('never accepts past a cap when two instances accept at once', async () => {
    const { store, another } = openStore();
    const second = another();
    const checks = { destination: chat('busy'), maxOpenPerDestination: 5, maxOpenTotal: 100 };
    const outcomes = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? store : second).messages.accept(message(`m-${String(i).padStart(2, '0')}`), checks)),
    );
    expect(outcomes.filter((outcome) => outcome.status === 'accepted')).toHaveLength(5);
    expect(await second.messages.pending()).toHaveLength(5);
    const pendingCap = { ...ROOMY, maxPendingMessages: 8 };
    const more = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? store : second).messages.accept(message(`n-${i}`, 2, `chat-${i}`), { ...pendingCap, destination: chat(`chat-${i}`) })),
    );
    expect(more.filter((outcome) => outcome.status === 'accepted')).toHaveLength(3);
    expect(await store.messages.pending()).toHaveLength(8);
  });

  it('answers a seen key once when two instances race with it', async () => {
    const { store, another } = openStore();
    const second = another();
    const expiresAt = Date.now() + 60_000;
    // Each answer names its own message, as the gateway's do.
    const outcomes = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        (i % 2 === 0 ? store : second).messages.accept(message(`m-${i}`), { ...ROOMY, idempotency: { key: 'update:7', answer: `answer of m-${i}`, expiresAt } }),
      ),
    );
    expect(outcomes.filter((outcome) => outcome.status === 'accepted')).toHaveLength(1);
    expect(await store.messages.pending()).toHaveLength(1);
  });

  it('leaves out a stored message that does not parse instead of failing the restart', async () => {
    const { store, keys, redis: connection } = openStore();
    await store.messages.accept(message('m-1', 1), ROOMY);
    await store.messages.accept(message('m-2', 2), ROOMY);
    await store.messages.accept(message('m-3', 3), ROOMY);
    await connection.hset(keys.key('messages'), 'm-2', '{not json');
    await connection.hset(keys.key('messages'), 'm-3', JSON.stringify({ id: 'm-3', text: 'no routing', receivedAt: 3 }));
    expect(ids(await store.messages.pending())).toEqual(['m-1']);
  });
});
