import type { Redis } from 'ioredis';
import type { RedisKeys } from '../store/redis/redis-keys.js';
import { luaScript, type LuaScript } from '../store/redis/redis-scripts.js';

/**
 * Adds a message to its conversation's mailbox once: 0 when it ran already (done), 2 when it
 * waits already (a replayed offer), 1 when added. The mailbox is noted as having work.
 */
const OFFER_LUA = `
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then return 0 end
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 2 end
redis.call('RPUSH', KEYS[3], ARGV[1])
redis.call('ZADD', KEYS[4], 'NX', ARGV[4], ARGV[3])
return 1`;

/**
 * The fence before a turn: the head of the mailbox and its data, only while the drain job's
 * BullMQ lock still holds this token ({0} otherwise: another instance drains it now).
 */
const PEEK_LUA = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return {0} end
local id = redis.call('LINDEX', KEYS[2], 0)
if not id then return {1} end
return {1, id, redis.call('HGET', KEYS[3], id) or ''}`;

/**
 * After a turn: removes it from the head of its mailbox, only while the lock holds this token
 * and it is still the head ({0} otherwise); remembers it done (a day, 10,000 at most), keeps an
 * unusable one aside, and answers the next head as PEEK does, saving the drain a round trip.
 */
const POP_LUA = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return {0} end
if redis.call('LINDEX', KEYS[2], 0) ~= ARGV[2] then return {0} end
redis.call('LPOP', KEYS[2])
if ARGV[7] == '1' then
  redis.call('HSET', KEYS[6], ARGV[2], redis.call('HGET', KEYS[3], ARGV[2]) or '')
end
redis.call('HDEL', KEYS[3], ARGV[2])
redis.call('ZADD', KEYS[4], ARGV[4], ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', tonumber(ARGV[4]) - tonumber(ARGV[5]))
redis.call('ZREMRANGEBYRANK', KEYS[4], 0, -(tonumber(ARGV[6]) + 1))
local id = redis.call('LINDEX', KEYS[2], 0)
if not id then
  redis.call('ZREM', KEYS[5], ARGV[3])
  return {1}
end
redis.call('ZADD', KEYS[5], ARGV[4], ARGV[3])
return {1, id, redis.call('HGET', KEYS[3], id) or ''}`;

/**
 * The conversations whose head has not moved since ARGV[1] and that have no drain job (a
 * producer that died between its push and its add, a drain job that failed): each one looked
 * at is stamped now, so it is looked at again only a sweep later.
 */
const SWEEP_LUA = `
local stuck = {}
for _, key in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[4]))) do
  local job = redis.call('GET', ARGV[2] .. 'de:' .. key)
  if not job or redis.call('EXISTS', ARGV[2] .. job) == 0 then table.insert(stuck, key) end
  redis.call('ZADD', KEYS[1], 'XX', ARGV[3], key)
end
return stuck`;

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

/** A message done is remembered a day, so a replayed offer of it (a start's replay racing its end) adds nothing. */
const DONE_AGE_MS = 86_400_000;
/** At most this many remembered done. */
const DONE_COUNT = 10_000;
/** Conversations a sweep looks at, at most. */
const SWEEP_LIMIT = 500;

/** The head of a mailbox as its drain job sees it. */
export type MailboxHead =
  /** The job's lock holds another token: another instance drains this mailbox now. */
  | { readonly fenced: true }
  | { readonly fenced: false; readonly message?: { readonly id: string; readonly data: string } };

/**
 * The conversations' mailboxes in Redis: a list of message ids per session key
 * (`turns:mailbox:<key>`), their data in one hash (`turns:messages`), the conversations with
 * work (`turns:waiting`, scored by when their head last moved), the ids done lately
 * (`turns:done`) and the unusable ones kept aside (`turns:unusable`). Every step is one script.
 */
export class TurnMailboxes {
  private readonly offerScript: LuaScript;
  private readonly peekScript: LuaScript;
  private readonly popScript: LuaScript;
  private readonly sweepScript: LuaScript;
  private readonly migrateScript: LuaScript;

  constructor(
    redis: Redis,
    private readonly keys: RedisKeys,
  ) {
    this.offerScript = luaScript(redis, 'threadlineMailboxOffer', OFFER_LUA);
    this.peekScript = luaScript(redis, 'threadlineMailboxPeek', PEEK_LUA);
    this.popScript = luaScript(redis, 'threadlineMailboxPop', POP_LUA);
    this.sweepScript = luaScript(redis, 'threadlineMailboxSweep', SWEEP_LUA);
    this.migrateScript = luaScript(redis, 'threadlineMailboxMigrate', MIGRATE_LUA);
  }

  /** Adds message `id` (its job data as JSON) to the mailbox of `key`: `added`, `waiting` already, or `done` already. */
  async offer(key: string, id: string, data: string): Promise<'added' | 'waiting' | 'done'> {
    const answer = await this.offerScript([this.messages, this.done, this.mailbox(key), this.waiting], [id, data, key, Date.now()]);
    return answer === 1 ? 'added' : answer === 2 ? 'waiting' : 'done';
  }

  /** The head of `key`'s mailbox, while `lockKey` (the drain job's BullMQ lock) holds `token`. */
  async peek(key: string, lockKey: string, token: string): Promise<MailboxHead> {
    return headOf((await this.peekScript([lockKey, this.mailbox(key), this.messages], [token])) as [number, string?, string?]);
  }

  /** Removes message `id`, run (or `unusable`), from the head of `key`'s mailbox, while `lockKey` holds `token`: the next head. */
  async pop(key: string, lockKey: string, token: string, id: string, unusable = false): Promise<MailboxHead> {
    const answer = (await this.popScript(
      [lockKey, this.mailbox(key), this.messages, this.done, this.waiting, this.unusable],
      [token, id, key, Date.now(), DONE_AGE_MS, DONE_COUNT, unusable ? '1' : '0'],
    )) as [number, string?, string?];
    return headOf(answer);
  }

  /** Conversations with work, untouched since `before`, whose drain job in `queue` is missing. */
  async stuck(queue: string, before: number): Promise<string[]> {
    return (await this.sweepScript([this.waiting], [before, `${this.keys.queuePrefix}:${queue}:`, Date.now(), SWEEP_LIMIT])) as string[];
  }

  /** Moves the jobs of an older version's inbound queue `queue` into the mailboxes: the conversations moved. */
  async migrate(queue: string): Promise<string[]> {
    const base = `${this.keys.queuePrefix}:${queue}:`;
    return (await this.migrateScript(
      [`${base}wait`, `${base}active`, `${base}paused`, this.messages, this.done, this.waiting, this.unusable, `${base}completed`],
      [base, this.mailbox(''), Date.now()],
    )) as string[];
  }

  mailbox(key: string): string {
    return this.keys.key('turns', 'mailbox', key);
  }

  get unusable(): string {
    return this.keys.key('turns', 'unusable');
  }

  private get messages(): string {
    return this.keys.key('turns', 'messages');
  }

  private get done(): string {
    return this.keys.key('turns', 'done');
  }

  private get waiting(): string {
    return this.keys.key('turns', 'waiting');
  }
}

/** A head as PEEK and POP answer it: {0} fenced, {1} empty, {1, id, data}. */
function headOf(answer: readonly [number, string?, string?]): MailboxHead {
  if (answer[0] === 0) return { fenced: true };
  return answer[1] === undefined ? { fenced: false } : { fenced: false, message: { id: answer[1], data: answer[2] ?? '' } };
}
