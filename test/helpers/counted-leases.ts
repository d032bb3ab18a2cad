import { Redis } from 'ioredis';
import { pino } from 'pino';
import type { LeaseFactory } from '../../src/lease/lease.js';
import { LeaderLease } from '../../src/queue/leader-lease.js';
import { RedisKeys } from '../../src/store/redis/redis-keys.js';

/** What a platform's lease test gives one instance: its own Redis connection and where to report. */
export interface CountedLeasesOptions {
  readonly redisUrl: string;
  readonly prefix: string;
  readonly instanceId: string;
  readonly leaseMs: number;
  /** Told every try of every lease the instance makes: `held` when it holds the lease after it. */
  readonly onAttempt: (held: boolean) => void;
  /** The connection's disconnect is pushed here, for the test's afterEach. */
  readonly closing: (() => Promise<void>)[];
}

/**
 * One gateway instance's leases, as a platform on several instances takes them: LeaderLeases on a
 * connection of the instance's own (disconnected to play a lost instance), each try reported.
 */
export function countedLeases(options: CountedLeasesOptions): { readonly connection: Redis; readonly keys: RedisKeys; readonly leases: LeaseFactory } {
  const connection = new Redis(options.redisUrl, { maxRetriesPerRequest: 2 });
  connection.on('error', () => undefined);
  options.closing.push(async () => connection.disconnect());
  const keys = new RedisKeys(options.prefix);
  const logger = pino({ level: 'silent' });
  const leases: LeaseFactory = (leaseName) => {
    const lease = new LeaderLease(leaseName, { redis: connection, keys, instanceId: options.instanceId, leaseMs: options.leaseMs, logger });
    return {
      get held() {
        return lease.held;
      },
      start: (listener) => lease.start({ ...listener, onAttempt: options.onAttempt }),
      stop: () => lease.stop(),
    };
  };
  return { connection, keys, leases };
}
