import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { LeaseListener, LeaseLoss } from '../../src/lease/lease.js';
import { LeaderLease } from '../../src/queue/leader-lease.js';
import { RedisKeys } from '../../src/store/redis/redis-keys.js';
import { until } from '../helpers/gateway.js';
import { startRedisServer, useRedis, type RedisServer } from '../helpers/redis.js';

const LEASE_MS = 300;
const logger = pino({ level: 'silent' });

const opened: Redis[] = [];
const leases: LeaderLease[] = [];
afterEach(async () => {
  for (const lease of leases.splice(0)) await lease.stop();
  for (const connection of opened.splice(0)) connection.disconnect();
});

/** A commands' connection as the backend opens it: commands fail fast while Redis is away. */
function connect(url: string, options: { maxRetriesPerRequest?: number | null } = {}): Redis {
  const connection = new Redis(url, { maxRetriesPerRequest: 2, retryStrategy: (attempt) => Math.min(attempt * 50, 200), ...options });
  connection.on('error', () => undefined);
  opened.push(connection);
  return connection;
}

/** What a lease told its listener, with the time of each event. */
interface Watched {
  readonly lease: LeaderLease;
  readonly events: { readonly kind: 'acquired' | LeaseLoss; readonly at: number }[];
  failedAttempts: number;
  lastRenewalAt: number | undefined;
  acquired(): boolean;
}

function watchedLease(
  redis: Redis,
  prefix: string,
  instanceId: string,
  onLost: (reason: LeaseLoss) => void | Promise<void> = () => {},
): Watched {
  const lease = new LeaderLease('telegram-polling', { redis, keys: new RedisKeys(prefix), instanceId, leaseMs: LEASE_MS, logger });
  leases.push(lease);
  const watched: Watched = {
    lease,
    events: [],
    failedAttempts: 0,
    lastRenewalAt: undefined,
    acquired: () => watched.events.some((event) => event.kind === 'acquired'),
  };
  const listener: LeaseListener = {
    onAcquired: () => void watched.events.push({ kind: 'acquired', at: Date.now() }),
    onLost: (reason) => {
      watched.events.push({ kind: reason, at: Date.now() });
      return onLost(reason);
    },
    onAttempt: (held) => {
      if (held) watched.lastRenewalAt = Date.now();
      else watched.failedAttempts++;
    },
  };
  lease.start(listener);
  return watched;
}

describe('a leader lease in Redis', () => {
  const redis = useRedis();

  it('is held by exactly one of two instances, its key naming the holder', async () => {
    const prefix = redis.prefix();
    const a = watchedLease(connect(redis.url), prefix, 'a');
    const b = watchedLease(connect(redis.url), prefix, 'b');
    await until(() => a.acquired() || b.acquired(), 5_000);
    const [holder, waiter] = a.acquired() ? [a, b] : [b, a];
    // Three tries of the waiter span a whole lease: renewals kept the holder's key alive throughout.
    await until(() => waiter.failedAttempts >= 3, 5_000);
    expect(holder.lease.held).toBe(true);
    expect(waiter.lease.held).toBe(false);
    expect(waiter.events).toEqual([]);
    expect(await connect(redis.url).get(holder.lease.key)).toBe(holder.lease.token);
    expect(holder.lease.token.startsWith(holder === a ? 'a/' : 'b/')).toBe(true);
  });

  it('moves to another instance within the lease once its holder stops renewing (its connection gone, as on kill -9), the holder stopping first', async () => {
    const prefix = redis.prefix();
    const holderConnection = connect(redis.url);
    const a = watchedLease(holderConnection, prefix, 'a');
    await until(() => a.acquired(), 5_000);
    const b = watchedLease(connect(redis.url), prefix, 'b');
    await until(() => b.failedAttempts >= 1, 5_000);
    holderConnection.disconnect();
    await until(() => b.acquired(), 5_000);
    const lost = a.events.find((event) => event.kind !== 'acquired');
    const takenOver = b.events.find((event) => event.kind === 'acquired')!;
    expect(lost?.kind).toBe('unreachable');
    // The old holder stopped its work before the new one started it.
    expect(lost!.at).toBeLessThanOrEqual(takenOver.at);
    expect(a.lease.held).toBe(false);
    // Within the lease after the last renewal, plus one try of the waiter (a third) and timer slack.
    expect(takenOver.at - a.lastRenewalAt!).toBeLessThan(LEASE_MS * 2);
  });

  it('stops its holder when the lease is no longer its own', async () => {
    const prefix = redis.prefix();
    const connection = connect(redis.url);
    const a = watchedLease(connection, prefix, 'a');
    await until(() => a.acquired(), 5_000);
    await connection.set(a.lease.key, 'someone-else', 'PX', 60_000);
    await until(() => a.events.length === 2, 5_000);
    expect(a.events.map((event) => event.kind)).toEqual(['acquired', 'taken']);
    expect(a.lease.held).toBe(false);
    // Not its own: a stop leaves it alone.
    await a.lease.stop();
    expect(await connection.get(a.lease.key)).toBe('someone-else');
  });

  describe('with a Redis that stops answering', () => {
    let server: RedisServer;
    beforeAll(async () => {
      server = await startRedisServer();
    });

    it('stops its holder once a renewal has no answer within a third of the lease', async () => {
      // As BullMQ's connections do: commands wait for Redis however long it is away, so only the timeout ends them.
      const a = watchedLease(connect(server.url, { maxRetriesPerRequest: null }), 'tltest-hang', 'a');
      await until(() => a.acquired(), 5_000);
      await server.stop();
      await until(() => a.events.length === 2, 5_000);
      expect(a.events.map((event) => event.kind)).toEqual(['acquired', 'unreachable']);
      expect(a.lease.held).toBe(false);
    });
  });

  it('at stop, keeps renewing while its work winds down, then releases it so another takes over at once', async () => {
    const prefix = redis.prefix();
    const reader = connect(redis.url);
    let windDown!: () => void;
    const wound = new Promise<void>((resolve) => (windDown = resolve));
    let keyWhileStopping: string | null = null;
    const a = watchedLease(connect(redis.url), prefix, 'a', async () => {
      keyWhileStopping = await reader.get(a.lease.key);
      await wound;
    });
    await until(() => a.acquired(), 5_000);
    const b = watchedLease(connect(redis.url), prefix, 'b');
    const stopped = a.lease.stop();
    // The work takes longer than a lease to stop: the waiter must not take over meanwhile.
    const triedBefore = b.failedAttempts;
    await until(() => b.failedAttempts >= triedBefore + 5, 5_000);
    expect(b.acquired()).toBe(false);
    expect(keyWhileStopping).toBe(a.lease.token);
    windDown();
    await stopped;
    const releasedAt = Date.now();
    await until(() => b.acquired(), 5_000);
    expect(a.events.map((event) => event.kind)).toEqual(['acquired', 'stopping']);
    // At the waiter's next try (a third of the lease), not once the key ran out its lease.
    expect(b.events[0]!.at - releasedAt).toBeLessThan(LEASE_MS);
    expect(await reader.get(a.lease.key)).toBe(b.lease.token);
  });
});
