import type { Redis } from 'ioredis';
import type { SyncTokens } from '../store.js';
import type { RedisKeys } from './redis-keys.js';
import { guarded, luaScript } from './redis-scripts.js';

/** Sets field ARGV[1] to ARGV[3] when it holds ARGV[2] (ARGV[4] = '0': when it is unset); 1 when it changed. */
const ADVANCE = `
local current = redis.call('HGET', KEYS[1], ARGV[1])
if ARGV[4] == '0' then
  if current then return 0 end
elseif current ~= ARGV[2] then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
`;

/** Event streams' sync tokens in one hash (stream → token), each advanced by one script from the token read. */
export function redisSyncTokens(redis: Redis, keys: RedisKeys): SyncTokens {
  const tokens = keys.key('sync-tokens');
  const advance = luaScript(redis, 'threadlineAdvanceSyncToken', ADVANCE);
  return {
    get: async (stream) => (await guarded(redis.hget(tokens, stream))) ?? undefined,
    advance: async (stream, previous, token) => (await advance([tokens], [stream, previous ?? '', token, previous === undefined ? '0' : '1'])) === 1,
  };
}
