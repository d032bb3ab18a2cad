import type { Redis } from 'ioredis';
import type { HandoverState, HandoverStateFactory } from '../lease/handover-state.js';
import type { RedisKeys } from '../store/redis/redis-keys.js';

/** A value nobody wrote for a day is too old to hand over (a Gateway session lasts minutes once its connection is gone). */
const HANDOVER_TTL_MS = 24 * 3_600_000;

/** Handover state in Redis, shared by the instances: `<prefix>:handover:<name>`, expiring a day after its last write. */
export function redisHandoverState(redis: Redis, keys: RedisKeys): HandoverStateFactory {
  return (name): HandoverState => {
    const key = keys.key('handover', name);
    return {
      read: async () => (await redis.get(key)) ?? undefined,
      write: async (value) => {
        await redis.set(key, value, 'PX', HANDOVER_TTL_MS);
      },
    };
  };
}
