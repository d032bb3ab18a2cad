import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { messageOf } from '../errors.js';
import { runDetached } from '../session/index.js';
import type { RedisKeys } from '../store/redis/redis-keys.js';
import { luaScript, type LuaScript } from '../store/redis/redis-scripts.js';
import type { Lease, LeaseFactory, LeaseListener, LeaseLoss } from '../lease/lease.js';

/** Tries per lease: a holder renews twice before its key could expire, a waiter tries as often. */
const TRIES_PER_LEASE = 3;

/**
 * SET NX PX, and also true when the key already holds this token: an acquire whose answer
 * came too late to be trusted (and was let go) is taken up again at the next try.
 */
const ACQUIRE_LUA = `
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if holder then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`;

/** Extends the lease only while this holder still holds it: an expired one may be someone else's now. */
const RENEW_LUA = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`;

/** Deletes the lease only while this holder still holds it, so a stop never frees another's. */
const RELEASE_LUA = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`;

export interface RedisLeaseOptions {
  /** The commands' connection (fails fast while Redis is away). */
  readonly redis: Redis;
  readonly keys: RedisKeys;
  /** THREADLINE_INSTANCE_ID: written into the key, so `GET` shows who holds it. */
  readonly instanceId: string;
  /** THREADLINE_INSTANCE_LEASE_MS: a holder that stops renewing loses the lease after this. */
  readonly leaseMs: number;
  readonly logger: Logger;
}

/** Leases in Redis for the distributed mode; the backend builds it over its commands' connection. */
export function redisLeaseFactory(options: RedisLeaseOptions): LeaseFactory {
  return (name) => new LeaderLease(name, options);
}

/**
 * A lease in Redis: acquired as `SET key <instance>/<nonce> NX PX lease` does, renewed by a
 * compare-and-PEXPIRE every third of the lease, released by a compare-and-DEL at stop. A
 * holder whose renewal fails, or does not answer within a third of the lease, gives the
 * work up at once: the key expires at the earliest a lease after its last renewal, so the
 * work has at least a third of a lease to stop before another instance can start it.
 */
export class LeaderLease implements Lease {
  /** The instance id, and a nonce so a restarted process of the same id does not inherit its predecessor's lease. */
  readonly token: string;
  readonly key: string;
  private readonly everyMs: number;
  private readonly acquireScript: LuaScript;
  private readonly renewScript: LuaScript;
  private readonly releaseScript: LuaScript;
  private listener: LeaseListener | undefined;
  private holding = false;
  /** onAcquired was called and onLost not yet: the listener's work runs. */
  private working = false;
  private stopping = false;
  private halted = false;
  private timer: NodeJS.Timeout | undefined;
  /** The try under way: one at a time, so a slow Redis never piles them up. */
  private trying: Promise<void> = Promise.resolve();
  private stopped: Promise<void> | undefined;

  constructor(
    readonly name: string,
    private readonly options: RedisLeaseOptions,
  ) {
    this.key = options.keys.key('lease', name);
    this.token = `${options.instanceId}/${randomBytes(4).toString('hex')}`;
    this.everyMs = Math.max(1, Math.round(options.leaseMs / TRIES_PER_LEASE));
    this.acquireScript = luaScript(options.redis, 'threadlineLeaseAcquire', ACQUIRE_LUA);
    this.renewScript = luaScript(options.redis, 'threadlineLeaseRenew', RENEW_LUA);
    this.releaseScript = luaScript(options.redis, 'threadlineLeaseRelease', RELEASE_LUA);
  }

  get held(): boolean {
    return this.holding;
  }

  start(listener: LeaseListener): void {
    if (this.listener !== undefined) return;
    this.listener = listener;
    // From the root context: the tries, and the work they start, never carry a caller's routing.
    runDetached(() => this.tryNow());
  }

  stop(): Promise<void> {
    this.stopped ??= this.wind();
    return this.stopped;
  }

  private async wind(): Promise<void> {
    this.stopping = true;
    // A try under way may be acquiring: its outcome decides whether there is work to stop.
    await this.trying;
    if (this.working && this.listener !== undefined) {
      this.working = false;
      try {
        // Renewals carry on (the timer still runs) while the work stops.
        await this.listener.onLost('stopping');
      } catch (error) {
        this.options.logger.warn({ err: messageOf(error), lease: this.name }, 'stopping the work of a lease failed; releasing it anyway');
      }
    }
    this.halted = true;
    clearTimeout(this.timer);
    await this.trying;
    if (!this.holding) return;
    this.holding = false;
    try {
      await this.releaseScript([this.key], [this.token]);
    } catch (error) {
      this.options.logger.warn(
        { err: messageOf(error), lease: this.name },
        `could not release the ${this.name} lease in Redis; another instance takes it over once it expires`,
      );
    }
  }

  private tryNow(): void {
    if (this.halted) return;
    this.trying = (this.holding ? this.renew() : this.stopping ? Promise.resolve() : this.acquire()).finally(() => this.schedule());
  }

  private schedule(): void {
    if (this.halted) return;
    this.timer = setTimeout(() => this.tryNow(), this.everyMs);
  }

  private async acquire(): Promise<void> {
    let acquired = false;
    try {
      // An answer later than a third of the lease is not trusted: the key may have expired meanwhile.
      acquired = (await withinMs(this.acquireScript([this.key], [this.token, this.options.leaseMs]), this.everyMs)) === 1;
    } catch {
      // Redis away or slow: nobody else can take the lease over then either; the connection logs the outage.
    }
    this.listener?.onAttempt?.(acquired);
    if (!acquired || this.stopping) {
      // Acquired while stopping: not worth starting work for; wind() releases it.
      this.holding = acquired;
      return;
    }
    this.holding = true;
    this.working = true;
    this.options.logger.info({ lease: this.name, holder: this.token }, `this instance holds the ${this.name} lease`);
    this.listener?.onAcquired();
  }

  private async renew(): Promise<void> {
    let loss: LeaseLoss | undefined;
    try {
      const renewed = await withinMs(this.renewScript([this.key], [this.token, this.options.leaseMs]), this.everyMs);
      if (renewed !== 1) loss = 'taken';
    } catch {
      loss = 'unreachable';
    }
    if (loss === undefined) {
      this.listener?.onAttempt?.(true);
      return;
    }
    this.holding = false;
    this.listener?.onAttempt?.(false);
    // While stopping, onLost('stopping') is already winding the work down.
    if (!this.working) return;
    this.working = false;
    this.options.logger.warn(
      { lease: this.name, reason: loss },
      loss === 'taken'
        ? `the ${this.name} lease expired before it was renewed; stopping here, another instance may hold it now`
        : `could not renew the ${this.name} lease in Redis; stopping here so that no two instances do it at once`,
    );
    try {
      await this.listener?.onLost(loss);
    } catch (error) {
      this.options.logger.warn({ err: messageOf(error), lease: this.name }, 'stopping the work of a lost lease failed');
    }
  }
}

/** `promise`, or a rejection once `ms` pass first: a renewal that hangs counts as failed. */
function withinMs<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  // A late answer or failure of the losing command must not surface as an unhandled rejection.
  promise.catch(() => undefined);
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
