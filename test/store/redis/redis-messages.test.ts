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

describe('RedisStore message keys', () => {
  it('sets an idempotency key to expire at its expiresAt, and never writes one already expired', async () => {
    const { store, keys, redis: connection } = openStore();
    const expiresAt = Date.now() + 60_000;
    await store.messages.accept(message('m-1'), { ...ROOMY, idempotency: { key: 'update:1', answer: 'first', expiresAt } });
    // Redis forgets it at expiresAt: memory stays bounded however many keys arrive.
    expect(await connection.pexpiretime(keys.key('intake', 'update:1'))).toBe(expiresAt);
    await store.messages.accept(message('m-2'), { ...ROOMY, idempotency: { key: 'old', answer: 'x', expiresAt: Date.now() - 1 } });
    expect(await connection.exists(keys.key('intake', 'old'))).toBe(0);
  });

  it('leaves out a stored message without routing instead of failing the restart', async () => {
    const { store, keys, redis: connection } = openStore();
    await store.messages.accept(message('m-1', 1), ROOMY);
    await store.messages.accept(message('m-3', 3), ROOMY);
    await connection.hset(keys.key('messages'), 'm-3', JSON.stringify({ id: 'm-3', text: 'no routing', receivedAt: 3 }));
    expect(ids(await store.messages.pending())).toEqual(['m-1']);
  });
});
