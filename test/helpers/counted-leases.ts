import { Redis } from 'ioredis';
import { pino } from 'pino';
import type { LeaseFactory } from '../../src/lease/lease.js';
import { LeaderLease } from '../../src/queue/leader-lease.js';
import { RedisKeys } from '../../src/store/redis/redis-keys.js';

/** What a platform's lease test gives one instance: its own Redis connection. */
export interface CountedLeasesOptions {
  readonly redisUrl: string;
  readonly prefix: string;
  readonly instanceId: string;
  readonly leaseMs: number;
  /** The connection's disconnect is pushed here, for the test's afterEach. */
  readonly closing: (() => Promise<void>)[];
}

/** The tries of one instance's leases so far, updated as they happen. */
export interface LeaseTries {
  /** Tries that found the lease another's. */
  failed: number;
  /** Whether the last try left the instance holding its lease. */
  holds: boolean;
}

/**
 * One gateway instance's leases, as a platform on several instances takes them: LeaderLeases on a
 * connection of the instance's own (disconnected to play a lost instance), each try counted.
 */
export function countedLeases(options: CountedLeasesOptions): { readonly connection: Redis; readonly keys: RedisKeys; readonly leases: LeaseFactory; readonly tries: LeaseTries } {
  const connection = new Redis(options.redisUrl, { maxRetriesPerRequest: 2 });
  connection.on('error', () => undefined);
  options.closing.push(async () => connection.disconnect());
  const keys = new RedisKeys(options.prefix);
  const logger = pino({ level: 'silent' });
  const tries: LeaseTries = { failed: 0, holds: false };
  const onAttempt = (held: boolean): void => {
    tries.holds = held;
    if (!held) tries.failed++;
  };
  const leases: LeaseFactory = (leaseName) => {
    const lease = new LeaderLease(leaseName, { redis: connection, keys, instanceId: options.instanceId, leaseMs: options.leaseMs, logger });
    return {
      get held() {
        return lease.held;
      },
      start: (listener) => lease.start({ ...listener, onAttempt }),
      stop: () => lease.stop(),
    };
  };
  return { connection, keys, leases, tries };
}
