import type { Redis } from 'ioredis';
import type { CallResults } from '../store.js';
import type { RedisKeys } from './redis-keys.js';
import { guarded, luaScript } from './redis-scripts.js';

/** How long a message's recorded results outlive their last record if it never completes: a bound, not a lifetime. */
export const CALL_RESULTS_TTL_MS = 7 * 24 * 3600_000;

/** The first result of a key stands; the hash of the message lives on with each record. */
const RECORD = `
redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`;

/** The hash of message `messageId`'s recorded results: completing the message deletes it (redis-messages.ts). */
export function callResultsKey(keys: RedisKeys, messageId: string): string {
  return keys.key('calls', messageId);
}

/** Recorded tool call results on Redis: one hash per message, by call key, deleted when the message completes. */
export function redisCallResults(redis: Redis, keys: RedisKeys): CallResults {
  const record = luaScript(redis, 'threadlineRecordCall', RECORD);
  return {
    get: async (messageId, key) => (await guarded(redis.hget(callResultsKey(keys, messageId), key))) ?? undefined,
    record: async (messageId, key, result) => {
      await record([callResultsKey(keys, messageId)], [key, result, CALL_RESULTS_TTL_MS]);
    },
  };
}
