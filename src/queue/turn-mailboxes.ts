import type { Redis } from 'ioredis';
import type { RedisKeys } from '../store/redis/redis-keys.js';
import { luaScript, type LuaScript } from '../store/redis/redis-scripts.js';
import { Mailboxes } from './mailboxes.js';

export type { MailboxHead } from './mailboxes.js';

/**
 * Moves what a partitioned inbound queue of an older version holds into the mailboxes, in the
 * order it would have run (the active job first, then the waiting ones oldest first), and
 * deletes those jobs: atomic, so instances starting together move each message once.
 * Completed ids are remembered done; unusable jobs are kept aside. Answers the conversations moved.
 */
const MIGRATE_LUA = `
local jobs = {}
for _, id in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do table.insert(jobs, id) end
for _, list in ipairs({KEYS[1], KEYS[3]}) do
  local waiting = redis.call('LRANGE', list, 0, -1)
  for i = #waiting, 1, -1 do table.insert(jobs, waiting[i]) end
end
local moved, seen = {}, {}
for _, id in ipairs(jobs) do
  local raw = redis.call('HGET', ARGV[1] .. id, 'data')
  local ok, data = pcall(cjson.decode, raw or '')
  if ok and type(data) == 'table' and type(data.id) == 'string' and type(data.key) == 'string' then
    if not redis.call('ZSCORE', KEYS[5], data.id) and redis.call('HSETNX', KEYS[4], data.id, raw) == 1 then
      redis.call('RPUSH', ARGV[2] .. data.key, data.id)
      redis.call('ZADD', KEYS[6], 'NX', ARGV[3], data.key)
      if not seen[data.key] then seen[data.key] = true; table.insert(moved, data.key) end
    end
  else
    redis.call('HSET', KEYS[7], id, raw or '')
  end
  redis.call('DEL', ARGV[1] .. id, ARGV[1] .. id .. ':lock')
end
local completed = redis.call('ZRANGE', KEYS[8], 0, -1, 'WITHSCORES')
for i = 1, #completed, 2 do
  local raw = redis.call('HGET', ARGV[1] .. completed[i], 'data')
  local ok, data = pcall(cjson.decode, raw or '')
  if ok and type(data) == 'table' and type(data.id) == 'string' then redis.call('ZADD', KEYS[5], completed[i + 1], data.id) end
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
return moved`;

/** The conversations' mailboxes (namespace `turns`), keyed by session key; they also take in an older version's inbound partitions. */
export class TurnMailboxes extends Mailboxes {
  private readonly migrateScript: LuaScript;

  constructor(redis: Redis, keys: RedisKeys) {
    super(redis, keys, 'turns');
    this.migrateScript = luaScript(redis, 'threadlineMailboxMigrate', MIGRATE_LUA);
  }

  /** Moves the jobs of an older version's inbound queue `queue` into the mailboxes: the conversations moved. */
  async migrate(queue: string): Promise<string[]> {
    const base = `${this.keys.queuePrefix}:${queue}:`;
    return (await this.migrateScript(
      [`${base}wait`, `${base}active`, `${base}paused`, this.messages, this.done, this.waiting, this.unusable, `${base}completed`],
      [base, this.mailbox(''), Date.now()],
    )) as string[];
  }
}
