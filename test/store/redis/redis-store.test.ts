import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { ThreadlineError } from '../../../src/errors.js';
import { RedisKeys } from '../../../src/store/redis/redis-keys.js';
import { RedisStore } from '../../../src/store/redis/redis-store.js';
import { startRedisServer, useRedis } from '../../helpers/redis.js';
import { chat, routingOf } from '../store.fixture.js';
import { StandInOutbox, useRedisStores } from './redis-store.fixture.js';

const redis = useRedis();
const openStore = useRedisStores(redis);
const ROOMY = { destination: chat('c:1'), maxOpenPerDestination: 10, maxOpenTotal: 10 };

describe('RedisStore', () => {
  const ownConnections: Redis[] = [];
  afterEach(() => {
    for (const connection of ownConnections.splice(0)) connection.disconnect();
  });

  it('writes only under its prefix: two deployments on one Redis never see each other', async () => {
    const first = openStore();
    const second = openStore();
    await first.store.messages.accept({ id: 'm-1', routing: routingOf('c:1'), text: 'hi', receivedAt: 1 }, ROOMY);
    await first.store.homes.set(chat('home'));
    await first.store.history.append('s1', chat('c:1'), [{ role: 'user', text: 'hi', at: 1 }], 10);
    await first.store.schedules.add(
      { id: 's1', origin: routingOf('c:1'), destination: chat('c:1'), target: 'origin', text: 't', nextAt: 1, createdAt: 1 },
      { maxPerDestination: 1, maxTotal: 1 },
    );
    expect(await second.store.messages.pending()).toEqual([]);
    expect(await second.store.homes.get('webhook')).toBeUndefined();
    expect(await second.store.history.recent('s1', chat('c:1'), 10)).toEqual([]);
    expect(await second.store.schedules.nextAt()).toBeUndefined();
    expect((await first.redis.keys(`${first.keys.prefix}*`)).every((key) => key.startsWith(`${first.keys.prefix}:`))).toBe(true);
    expect(await second.redis.keys(`${second.keys.prefix}*`)).toEqual([]);
  });

  it('runs its scripts again after Redis forgot them (a restart, SCRIPT FLUSH)', async () => {
    const { store, redis: connection } = openStore();
    await store.messages.accept({ id: 'm-1', routing: routingOf('c:1'), text: 'hi', receivedAt: 1 }, ROOMY);
    await connection.script('FLUSH');
    expect(await store.messages.accept({ id: 'm-2', routing: routingOf('c:1'), text: 'hi', receivedAt: 2 }, ROOMY)).toEqual({ status: 'accepted' });
  });

  it('closes what it was given once, and never the connection it does not own', async () => {
    const { redis: connection, keys } = openStore();
    let closed = 0;
    const store = RedisStore.open({ redis: connection, keys, outbox: new StandInOutbox(), close: async () => void closed++ });
    await Promise.all([store.close(), store.close()]);
    expect(closed).toBe(1);
    expect(await connection.ping()).toBe('PONG');
  });

  it('fails a call with TL_REDIS_UNAVAILABLE while Redis is away, and answers again once it is back', async () => {
    const server = await startRedisServer();
    const connection = new Redis(server.url, { maxRetriesPerRequest: 1, retryStrategy: () => 50 });
    connection.on('error', () => undefined);
    ownConnections.push(connection);
    const store = RedisStore.open({ redis: connection, keys: new RedisKeys(redis.prefix()), outbox: new StandInOutbox() });
    await store.homes.set(chat('home'));
    await server.stop();
    const failure = await store.messages.accept({ id: 'm-1', routing: routingOf('c:1'), text: 'hi', receivedAt: 1 }, ROOMY).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ThreadlineError);
    expect(failure).toMatchObject({ code: 'TL_REDIS_UNAVAILABLE' });
    await expect(store.homes.get('webhook')).rejects.toMatchObject({ code: 'TL_REDIS_UNAVAILABLE' });
    await server.restart();
    // Its scripts are loaded again on the new server.
    expect(await store.messages.accept({ id: 'm-1', routing: routingOf('c:1'), text: 'hi', receivedAt: 1 }, ROOMY)).toEqual({ status: 'accepted' });
  });
});
