import type { Redis } from 'ioredis';
import type { RedisKeys } from '../store/redis/redis-keys.js';
import { luaScript, type LuaScript } from '../store/redis/redis-scripts.js';

/**
 * Adds a message to its key's mailbox once: 0 when it ran already (done), 2 when it
 * waits already (a replayed offer), 1 when added. The mailbox is noted as having work.
 */
const OFFER_LUA = `
if ARGV[5] == '1' then redis.call('ZREM', KEYS[2], ARGV[1]) end
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
 * (-1) and it is still the head (-2); remembers it done (a day, 10,000 at most), keeps an
 * unusable one aside, and answers how many messages are left.
 */
const POP_LUA = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
if redis.call('LINDEX', KEYS[2], 0) ~= ARGV[2] then return -2 end
redis.call('LPOP', KEYS[2])
if ARGV[7] == '1' then
  redis.call('HSET', KEYS[6], ARGV[2], redis.call('HGET', KEYS[3], ARGV[2]) or '')
end
redis.call('HDEL', KEYS[3], ARGV[2])
redis.call('ZADD', KEYS[4], ARGV[4], ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', tonumber(ARGV[4]) - tonumber(ARGV[5]))
redis.call('ZREMRANGEBYRANK', KEYS[4], 0, -(tonumber(ARGV[6]) + 1))
local left = redis.call('LLEN', KEYS[2])
if left == 0 then redis.call('ZREM', KEYS[5], ARGV[3]) else redis.call('ZADD', KEYS[5], ARGV[4], ARGV[3]) end
return left`;

/** Replaces the data of the head of a mailbox (a retry's state), only while the lock holds this token and it is still the head. */
const REWRITE_LUA = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if redis.call('LINDEX', KEYS[2], 0) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[3], ARGV[2], ARGV[3])
return 1`;

/** The data of the heads of the ARGV[2] keys whose head moved longest ago: {key, data, ...}. */
const HEADS_LUA = `
local heads = {}
for _, key in ipairs(redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[2]) - 1)) do
  local id = redis.call('LINDEX', ARGV[1] .. key, 0)
  if id then
    table.insert(heads, key)
    table.insert(heads, redis.call('HGET', KEYS[2], id) or '')
  end
end
return heads`;

/**
 * The keys whose head has not moved since ARGV[1] and that have no drain job (a
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
 * Mailboxes in Redis, one per key, under a namespace (`turns`: a conversation's messages;
 * `outbox`: a destination's deliveries): a list of ids per key (`<ns>:mailbox:<key>`), their
 * data in one hash (`<ns>:messages`), the keys with work (`<ns>:waiting`, scored by when their
 * head last moved), the ids done lately (`<ns>:done`) and the unusable ones kept aside
 * (`<ns>:unusable`). Every step is one script. At most one drain job (its BullMQ lock token the
 * fence of peek, rewrite and pop) works a mailbox at a time: its key is the unit of order.
 */
export class Mailboxes {
  private readonly offerScript: LuaScript;
  private readonly peekScript: LuaScript;
  private readonly popScript: LuaScript;
  private readonly rewriteScript: LuaScript;
  private readonly headsScript: LuaScript;
  private readonly sweepScript: LuaScript;

  constructor(
    protected readonly redis: Redis,
    protected readonly keys: RedisKeys,
    readonly namespace: string,
  ) {
    this.offerScript = luaScript(redis, 'threadlineMailboxOffer', OFFER_LUA);
    this.peekScript = luaScript(redis, 'threadlineMailboxPeek', PEEK_LUA);
    this.popScript = luaScript(redis, 'threadlineMailboxPop', POP_LUA);
    this.rewriteScript = luaScript(redis, 'threadlineMailboxRewrite', REWRITE_LUA);
    this.headsScript = luaScript(redis, 'threadlineMailboxHeads', HEADS_LUA);
    this.sweepScript = luaScript(redis, 'threadlineMailboxSweep', SWEEP_LUA);
  }

  /**
   * Adds message `id` (its data) to the mailbox of `key`: `added`, `waiting` already, or `done`
   * already; `again` forgets that it was done first (a dead letter retried by hand).
   */
  async offer(key: string, id: string, data: string, again = false): Promise<'added' | 'waiting' | 'done'> {
    const answer = await this.offerScript([this.messages, this.done, this.mailbox(key), this.waiting], [id, data, key, Date.now(), again ? '1' : '0']);
    return answer === 1 ? 'added' : answer === 2 ? 'waiting' : 'done';
  }

  /** The head of `key`'s mailbox, while `lockKey` (the drain job's BullMQ lock) holds `token`. */
  async peek(key: string, lockKey: string, token: string): Promise<MailboxHead> {
    const answer = (await this.peekScript([lockKey, this.mailbox(key), this.messages], [token])) as [number, string?, string?];
    if (answer[0] === 0) return { fenced: true };
    return answer[1] === undefined ? { fenced: false } : { fenced: false, message: { id: answer[1], data: answer[2] ?? '' } };
  }

  /** Replaces the data of `id`, the head of `key`'s mailbox, while the lock holds `token`: false when fenced. */
  async rewrite(key: string, lockKey: string, token: string, id: string, data: string): Promise<boolean> {
    return (await this.rewriteScript([lockKey, this.mailbox(key), this.messages], [token, id, data])) === 1;
  }

  /** Removes message `id`, run (or `unusable`), from the head of `key`'s mailbox: the messages left, or `fenced`. */
  async pop(key: string, lockKey: string, token: string, id: string, unusable = false): Promise<number | 'fenced'> {
    const answer = (await this.popScript(
      [lockKey, this.mailbox(key), this.messages, this.done, this.waiting, this.unusable],
      [token, id, key, Date.now(), DONE_AGE_MS, DONE_COUNT, unusable ? '1' : '0'],
    )) as number;
    return answer < 0 ? 'fenced' : answer;
  }

  /** Keys with work, untouched since `before`, whose drain job in `queue` is missing. */
  async stuck(queue: string, before: number): Promise<string[]> {
    return (await this.sweepScript([this.waiting], [before, `${this.keys.queuePrefix}:${queue}:`, Date.now(), SWEEP_LIMIT])) as string[];
  }

  /** The data of the heads of at most `limit` mailboxes, those whose head moved longest ago first. */
  async heads(limit: number): Promise<Array<{ readonly key: string; readonly data: string }>> {
    const flat = (await this.headsScript([this.waiting, this.messages], [this.mailbox(''), limit])) as string[];
    const heads: Array<{ key: string; data: string }> = [];
    for (let index = 0; index < flat.length; index += 2) heads.push({ key: flat[index]!, data: flat[index + 1]! });
    return heads;
  }

  /** Every key whose mailbox has work. */
  async keysWithWork(): Promise<string[]> {
    return this.redis.zrange(this.waiting, 0, -1);
  }

  /** The ids waiting in `key`'s mailbox, head first. */
  async ids(key: string): Promise<string[]> {
    return this.redis.lrange(this.mailbox(key), 0, -1);
  }

  /** The data of waiting messages `ids`, in their order (undefined where there is none). */
  async read(ids: readonly string[]): Promise<Array<string | undefined>> {
    if (ids.length === 0) return [];
    return (await this.redis.hmget(this.messages, ...ids)).map((data) => data ?? undefined);
  }

  mailbox(key: string): string {
    return this.keys.key(this.namespace, 'mailbox', key);
  }

  get unusable(): string {
    return this.keys.key(this.namespace, 'unusable');
  }

  protected get messages(): string {
    return this.keys.key(this.namespace, 'messages');
  }

  protected get done(): string {
    return this.keys.key(this.namespace, 'done');
  }

  protected get waiting(): string {
    return this.keys.key(this.namespace, 'waiting');
  }
}
