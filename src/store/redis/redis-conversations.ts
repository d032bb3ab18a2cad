import type { Redis } from 'ioredis';
import type { Conversations } from '../store.js';
import type { RedisKeys } from './redis-keys.js';
import { guarded } from './redis-scripts.js';

/**
 * Conversation epochs in one hash (key → epoch), bumped with HINCRBY so /new on two instances
 * at once gives two epochs. Nothing is cached: another instance may bump an epoch at any time.
 */
export function redisConversations(redis: Redis, keys: RedisKeys): Conversations {
  const epochs = keys.key('conversations');
  return {
    epoch: async (key) => Number((await guarded(redis.hget(epochs, key))) ?? 0),
    next: (key) => guarded(redis.hincrby(epochs, key, 1)),
  };
}
