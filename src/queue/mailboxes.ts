import type { Redis } from 'ioredis';
import type { RedisKeys } from '../store/redis/redis-keys.js';
import { luaScript, type LuaScript } from '../store/redis/redis-scripts.js';

/**
 * Adds a message to its key's mailbox once: 0 when it ran already (done), 2 when it waits
 * already (a replayed offer), else added: 4 when the mailbox has an owner (who pops it in
 * turn), 3 when ARGV[6] became its owner (with the head), 1 when it has none. The mailbox is
 * noted as having work.
 */
const OFFER_LUA = `
if ARGV[5] == '1' then redis.call('ZREM', KEYS[2], ARGV[1]) end
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then return {0} end
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return {2} end
redis.call('RPUSH', KEYS[3], ARGV[1])
redis.call('ZADD', KEYS[4], 'NX', ARGV[4], ARGV[3])
if redis.call('EXISTS', KEYS[5]) == 1 then return {4} end
if ARGV[6] == '' then return {1} end
redis.call('SET', KEYS[5], ARGV[6], 'PX', ARGV[7])
local id = redis.call('LINDEX', KEYS[3], 0)
return {3, id, redis.call('HGET', KEYS[1], id) or ''}`;

/**
 * Makes ARGV[1] the owner of a mailbox with work (a drain job starting): {0} when another
 * owns it, {1} when it is empty (nothing owned), {1, id, data} with its head otherwise.
 */
const CLAIM_LUA = `
local owner = redis.call('GET', KEYS[1])
if owner and owner ~= ARGV[1] then return {0} end
local id = redis.call('LINDEX', KEYS[2], 0)
if not id then
  if owner then redis.call('DEL', KEYS[1]) end
  return {1}
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {1, id, redis.call('HGET', KEYS[3], id) or ''}`;

/**
 * After a turn: removes it from the head of its mailbox, only while ARGV[1] owns it ({-1})
 * and it is still the head ({-2}); remembers it done (a day, 10,000 at most), keeps an
 * unusable one aside, and answers how many are left with the next head. An emptied mailbox
 * loses its owner in the same step, so a message offered next finds none.
 */
const POP_LUA = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return {-1} end
if redis.call('LINDEX', KEYS[2], 0) ~= ARGV[2] then return {-2} end
redis.call('LPOP', KEYS[2])
if ARGV[7] == '1' then
  redis.call('HSET', KEYS[6], ARGV[2], redis.call('HGET', KEYS[3], ARGV[2]) or '')
end
redis.call('HDEL', KEYS[3], ARGV[2])
redis.call('ZADD', KEYS[4], ARGV[4], ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', tonumber(ARGV[4]) - tonumber(ARGV[5]))
redis.call('ZREMRANGEBYRANK', KEYS[4], 0, -(tonumber(ARGV[6]) + 1))
local left = redis.call('LLEN', KEYS[2])
if left == 0 then
  redis.call('ZREM', KEYS[5], ARGV[3])
  redis.call('DEL', KEYS[1])
  return {0}
end
redis.call('ZADD', KEYS[5], ARGV[4], ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[8])
local id = redis.call('LINDEX', KEYS[2], 0)
return {left, id, redis.call('HGET', KEYS[3], id) or ''}`;

/** Gives up ARGV[1]'s ownership of a mailbox: the messages left (whoever releases wakes a drain job for them). */
const RELEASE_LUA = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return redis.call('LLEN', KEYS[2])`;

/** Extends each owner key KEYS[i] still held by ARGV[i + 1] by ARGV[1] ms: the indexes (1-based) of those lost. */
const RENEW_LUA = `
local lost = {}
for i, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[i + 1] then redis.call('PEXPIRE', key, ARGV[1]) else table.insert(lost, i) end
end
return lost`;

/** Replaces the data of the head of a mailbox (a retry's state), only while ARGV[1] owns it and it is still the head. */
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
 * The keys whose head has not moved since ARGV[1] that have neither an owner nor a drain
 * job (a producer or an owner that died, a drain job that failed): each one looked at is
 * stamped now, so it is looked at again only a sweep later.
 */
const SWEEP_LUA = `
local stuck = {}
for _, key in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[4]))) do
  if redis.call('EXISTS', ARGV[5] .. key) == 0 then
    local job = redis.call('GET', ARGV[2] .. 'de:' .. key)
    if not job or redis.call('EXISTS', ARGV[2] .. job) == 0 then table.insert(stuck, key) end
  end
  redis.call('ZADD', KEYS[1], 'XX', ARGV[3], key)
end
return stuck`;

/** A message done is remembered a day, so a replayed offer of it (a start's replay racing its end) adds nothing. */
const DONE_AGE_MS = 86_400_000;
/** At most this many remembered done. */
const DONE_COUNT = 10_000;
/** Conversations a sweep looks at, at most. */
const SWEEP_LIMIT = 500;

/** A message waiting in a mailbox: its id and data. */
export interface MailboxMessage {
  readonly id: string;
  readonly data: string;
}

/** The head of a mailbox as its owner sees it. */
export type MailboxHead =
  /** Another owns the mailbox now (this one's lease lapsed, or it never had it). */
  | { readonly fenced: true }
  | { readonly fenced: false; readonly message?: MailboxMessage };

/** What became of an offer: ran or waiting already, added (with an owner or not), or added with the offerer its owner. */
export type Offered = { readonly outcome: 'done' | 'waiting' | 'added' | 'owned' } | { readonly outcome: 'claimed'; readonly head: MailboxMessage };

/** An owner's token and how long its ownership lasts unrenewed. */
export interface Ownership {
  readonly token: string;
  readonly leaseMs: number;
}

/**
 * Mailboxes in Redis, one per key, under a namespace (`turns`: a conversation's messages;
 * `outbox`: a destination's deliveries): a list of ids per key (`<ns>:mailbox:<key>`), their
 * data in one hash (`<ns>:messages`), the keys with work (`<ns>:waiting`, scored by when their
 * head last moved), the ids done lately (`<ns>:done`) and the unusable ones kept aside
 * (`<ns>:unusable`). Every step is one script. A mailbox with work has at most one owner at a
 * time (`<ns>:owner:<key>`, a token with a lease): the fence of rewrite and pop, so its
 * key is the unit of order. The offerer with a free slot becomes the owner at once; otherwise
 * a drain job (any instance's) claims it.
 */
export class Mailboxes {
  private readonly offerScript: LuaScript;
  private readonly claimScript: LuaScript;
  private readonly popScript: LuaScript;
  private readonly releaseScript: LuaScript;
  private readonly renewScript: LuaScript;
  private readonly rewriteScript: LuaScript;
  private readonly headsScript: LuaScript;
  private readonly sweepScript: LuaScript;

  constructor(
    protected readonly redis: Redis,
    protected readonly keys: RedisKeys,
    readonly namespace: string,
  ) {
    this.offerScript = luaScript(redis, 'threadlineMailboxOffer', OFFER_LUA);
    this.claimScript = luaScript(redis, 'threadlineMailboxClaim', CLAIM_LUA);
    this.popScript = luaScript(redis, 'threadlineMailboxPop', POP_LUA);
    this.releaseScript = luaScript(redis, 'threadlineMailboxRelease', RELEASE_LUA);
    this.renewScript = luaScript(redis, 'threadlineMailboxRenew', RENEW_LUA);
    this.rewriteScript = luaScript(redis, 'threadlineMailboxRewrite', REWRITE_LUA);
    this.headsScript = luaScript(redis, 'threadlineMailboxHeads', HEADS_LUA);
    this.sweepScript = luaScript(redis, 'threadlineMailboxSweep', SWEEP_LUA);
  }

  /**
   * Adds message `id` (its data) to the mailbox of `key`, once. With `claim`, the offerer
   * becomes the owner of a mailbox that has none and gets its head. `again` forgets that the
   * message was done first (a dead letter retried by hand).
   */
  async offer(key: string, id: string, data: string, options: { readonly again?: boolean; readonly claim?: Ownership } = {}): Promise<Offered> {
    const { claim } = options;
    const answer = (await this.offerScript(
      [this.messages, this.done, this.mailbox(key), this.waiting, this.owner(key)],
      [id, data, key, Date.now(), options.again === true ? '1' : '0', claim?.token ?? '', claim?.leaseMs ?? 0],
    )) as [number, string?, string?];
    const outcome = (['done', 'added', 'waiting', 'claimed', 'owned'] as const)[answer[0]]!;
    return outcome === 'claimed' ? { outcome, head: { id: answer[1]!, data: answer[2] ?? '' } } : { outcome };
  }

  /** Makes `owner` the owner of `key`'s mailbox and answers its head; fenced when another owns it, no message when it is empty (nothing owned). */
  async claim(key: string, owner: Ownership): Promise<MailboxHead> {
    return headOf((await this.claimScript([this.owner(key), this.mailbox(key), this.messages], [owner.token, owner.leaseMs])) as [number, string?, string?]);
  }

  /** Replaces the data of `id`, the head of `key`'s mailbox, while `token` owns it: false when fenced. */
  async rewrite(key: string, token: string, id: string, data: string): Promise<boolean> {
    return (await this.rewriteScript([this.owner(key), this.mailbox(key), this.messages], [token, id, data])) === 1;
  }

  /**
   * Removes message `id`, run (or `unusable`), from the head of `key`'s mailbox while `owner`
   * owns it, and answers the next head; an emptied mailbox has no owner from then on.
   */
  async pop(key: string, owner: Ownership, id: string, unusable = false): Promise<MailboxHead> {
    const answer = (await this.popScript(
      [this.owner(key), this.mailbox(key), this.messages, this.done, this.waiting, this.unusable],
      [owner.token, id, key, Date.now(), DONE_AGE_MS, DONE_COUNT, unusable ? '1' : '0', owner.leaseMs],
    )) as [number, string?, string?];
    if (answer[0] < 0) return { fenced: true };
    return answer[0] === 0 ? { fenced: false } : { fenced: false, message: { id: answer[1]!, data: answer[2] ?? '' } };
  }

  /** Gives up `token`'s ownership of `key`'s mailbox: the messages left in it, for which the caller wakes a drain job. */
  async release(key: string, token: string): Promise<number> {
    return (await this.releaseScript([this.owner(key), this.mailbox(key)], [token])) as number;
  }

  /** Extends the lease of every mailbox `owned` here: the keys whose ownership was lost (taken over or expired). */
  async renew(owned: ReadonlyArray<{ readonly key: string; readonly token: string }>, leaseMs: number): Promise<string[]> {
    if (owned.length === 0) return [];
    const lost = (await this.renewScript(
      owned.map(({ key }) => this.owner(key)),
      [leaseMs, ...owned.map(({ token }) => token)],
    )) as number[];
    return lost.map((index) => owned[index - 1]!.key);
  }

  /** Keys with work, untouched since `before`, whose drain job in `queue` is missing. */
  async stuck(queue: string, before: number): Promise<string[]> {
    return (await this.sweepScript([this.waiting], [before, `${this.keys.queuePrefix}:${queue}:`, Date.now(), SWEEP_LIMIT, this.owner('')])) as string[];
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

  /** The key holding the token of `key`'s mailbox's owner. */
  owner(key: string): string {
    return this.keys.key(this.namespace, 'owner', key);
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

function headOf(answer: [number, string?, string?]): MailboxHead {
  if (answer[0] === 0) return { fenced: true };
  return answer[1] === undefined ? { fenced: false } : { fenced: false, message: { id: answer[1], data: answer[2] ?? '' } };
}
