// A RedisStore on the test Redis under a fresh prefix, with a stand-in outbox whose states a test sets.
import { Redis } from 'ioredis';
import { afterEach } from 'vitest';
import type { DeliveryStatus } from '../../../src/session/delivery.js';
import { RedisKeys } from '../../../src/store/redis/redis-keys.js';
import { RedisStore, type RedisStoreParts } from '../../../src/store/redis/redis-store.js';
import type { OutboxRecords } from '../../../src/store/store.js';
import type { TestRedis } from '../../helpers/redis.js';

/** An outbox that holds nothing but the statuses and states a test gives it. */
export class StandInOutbox implements OutboxRecords {
  readonly statuses = new Map<string, DeliveryStatus>();
  add(): never {
    throw new Error('not used by the store');
  }
  retryFailed(): never {
    throw new Error('not used by the store');
  }
  list(): never {
    throw new Error('not used by the store');
  }
  pressure(): never {
    throw new Error('not used by the store');
  }
  overdue(): never {
    throw new Error('not used by the store');
  }
  async states(ids: readonly string[]): Promise<Map<string, DeliveryStatus>> {
    return new Map([...this.statuses].filter(([id]) => ids.includes(id)));
  }
}

export interface OpenedStore {
  readonly store: RedisStore;
  readonly keys: RedisKeys;
  /** The store's own connection, for arranging what the outbox module would write. */
  readonly redis: Redis;
  readonly outbox: StandInOutbox;
  /** Another store on the same prefix through a connection of its own: a second gateway instance. */
  another(): RedisStore;
}

/** Opens stores on a fresh prefix each call; every connection opened is closed after the test. */
export function useRedisStores(redis: TestRedis): (parts?: Partial<RedisStoreParts>) => OpenedStore {
  const connections: Redis[] = [];
  afterEach(async () => {
    await Promise.all(connections.splice(0).map((connection) => connection.quit()));
  });
  const connect = () => {
    const connection = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    connections.push(connection);
    return connection;
  };
  return (parts = {}) => {
    const keys = new RedisKeys(redis.prefix());
    const connection = connect();
    const outbox = new StandInOutbox();
    const store = RedisStore.open({ redis: connection, keys, outbox, ...parts });
    return { store, keys, redis: connection, outbox, another: () => RedisStore.open({ redis: connect(), keys, outbox, ...parts }) };
  };
}
