import type { Redis } from 'ioredis';
import { formatDestination, parseDestination, type Destination } from '../../session/delivery.js';
import type { HomeChannels } from '../store.js';
import type { RedisKeys } from './redis-keys.js';
import { guarded } from './redis-scripts.js';

/** The hash of home channels (platform → formatDestination's spelling): one small entry per platform. */
export function homesKey(keys: RedisKeys): string {
  return keys.key('homes');
}

/** Each platform's home channel (/sethome), one hash field per platform, shared by every instance. */
export function redisHomeChannels(redis: Redis, keys: RedisKeys): HomeChannels {
  const homes = homesKey(keys);
  return {
    get: async (platform) => {
      const stored = await guarded(redis.hget(homes, platform));
      return stored === null ? undefined : parseDestination(stored);
    },
    set: async (destination: Destination) => {
      await guarded(redis.hset(homes, destination.platform, formatDestination(destination)));
    },
  };
}
