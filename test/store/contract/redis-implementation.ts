// The distributed store on the file's Redis, each test under a key prefix of its own.
import { formatDestination } from '../../../src/session/delivery.js';
import type { DeliveryState } from '../../../src/store/store.js';
import { useRedis } from '../../helpers/redis.js';
import { useRedisStores } from '../redis/redis-store.fixture.js';
import { routingOf } from '../store.fixture.js';
import type { StoreImplementation, StoreUnderTest } from './store-under-test.js';

/** Call at a test file's top level: the file shares one Redis, started before its tests. */
export function redisImplementation(): StoreImplementation {
  const openStore = useRedisStores(useRedis());
  return {
    name: 'RedisStore',
    traits: { sharedIntake: true, keepsInstance: true },
    async open(): Promise<StoreUnderTest> {
      // The outbox module's notices, as full states: what the distributed outbox can tell of one.
      const notices = new Map<string, DeliveryState>();
      const opened = openStore({ noticeStates: async (ids) => new Map(ids.flatMap((id) => (notices.has(id) ? [[id, notices.get(id)!] as const] : []))) });
      const { store, keys, redis, outbox } = opened;
      return {
        store,
        peer: () => opened.another(),
        reopen: async () => {
          await store.close();
          return opened.another();
        },
        // What the outbox module counts for a delivery recorded and not yet done.
        openDelivery: async (destination) => {
          await redis.multi().hincrby(keys.openDeliveries, keys.openField(destination), 1).incr(keys.openDeliveriesTotal).exec();
          return { finish: async () => void (await redis.multi().hincrby(keys.openDeliveries, keys.openField(destination), -1).decr(keys.openDeliveriesTotal).exec()) };
        },
        notice: async (processId, status) => {
          const id = `proc:${processId}:done`;
          outbox.statuses.set(id, status);
          const destination = formatDestination({ platform: 'webhook', chatId: `notice-of-${processId}` });
          notices.set(id, { id, kind: 'notification', status, destination, origin: routingOf(`notice-of-${processId}`), attempts: status === 'sending' ? 0 : 1, attemptsSince: 1, dueAt: 1 });
        },
        damage: async (table, id, origin) => void (await redis.hset(keys.key(table, 'record', id), 'origin', origin, 'destination', 'no-colon')),
        damageMessage: async (id) => void (await redis.hset(keys.key('messages'), id, '{not json')),
        close: () => store.close(),
      };
    },
  };
}
