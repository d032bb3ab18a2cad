import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { GatewayQueues } from '../gateway/gateway-options.js';
import type { RedisConfig } from '../gateway/gateway-config.js';
import { connectRedis } from '../store/redis/redis-connection.js';
import { RedisKeys } from '../store/redis/redis-keys.js';
import { assertRedisFsync } from '../store/redis/redis-fsync.js';
import { assertRedisSuitable } from '../store/redis/redis-requirements.js';
import { RedisStore } from '../store/redis/redis-store.js';
import type { ScheduleRunnerFactory } from '../tools/cron/index.js';
import { InstanceHeartbeat } from './instance-heartbeat.js';
import type { LeaseFactory } from '../lease/lease.js';
import { redisLeaseFactory } from './leader-lease.js';
import { RedisOutbox } from './redis-outbox.js';
import { RedisOutboxRecords } from './redis-outbox-records.js';
import { RedisScheduleRunner } from './redis-schedule-runner.js';
import { RedisSuitabilityWatch } from './redis-suitability-watch.js';
import { RedisTurnQueue } from './redis-turn-queue.js';

/** The lease of the instance that matches the schedules queue to the stored jobs. */
const SCHEDULES_RECONCILE_LEASE = 'schedules-reconcile';

/** The distributed gateway's parts on one Redis: the shared store and the queues every instance works. */
export interface RedisBackend {
  /** Closing it closes the queues and every connection the backend opened. */
  readonly store: RedisStore;
  readonly queues: GatewayQueues;
  /** This instance's heartbeat: started before the tools, stopped when the store closes. */
  readonly heartbeat: InstanceHeartbeat;
  /** Leases for work only one instance may do at a time (Telegram long polling). */
  readonly leases: LeaseFactory;
  /** The runner of reminders and cron jobs on BullMQ, made from the tools' services; closed with the store. */
  readonly schedules: ScheduleRunnerFactory;
  /** Start-up's check of Redis, made again while the gateway runs once started; stopped when the store closes. */
  readonly suitability: RedisSuitabilityWatch;
}

export interface RedisBackendOptions {
  readonly logger: Logger;
  /** THREADLINE_DEAD_LETTER_RETENTION_MS: how long a failed delivery is kept. */
  readonly deadLetterRetentionMs: number;
  /** THREADLINE_CONCURRENCY: turns this instance runs at once; default 1 (the CLI runs none). */
  readonly concurrency?: number | undefined;
}

/**
 * Connects to Redis, refuses one that would lose accepted work (TL_REDIS_UNSUITABLE) or cannot
 * be reached (TL_REDIS_UNAVAILABLE), and builds the store and queues on it, and the watch that
 * checks the first again while a gateway runs. The commands'
 * connection fails fast while Redis is away, so intake answers 503; BullMQ's workers wait on
 * connections of their own and carry on when Redis is back.
 */
export async function openRedisBackend(config: RedisConfig, options: RedisBackendOptions): Promise<RedisBackend> {
  const { logger } = options;
  const keys = new RedisKeys(config.prefix);
  const commands = await connectRedis(config.url, {
    onError: (error) => logger.warn({ err: error }, 'Redis connection failed; reconnecting'),
  });
  const workerConnections: Redis[] = [];
  // Synchronous, as the workers ask for one: it connects in the background, retrying while Redis is away.
  const workerConnection = (): Redis => {
    const connection = new Redis(config.url, { maxRetriesPerRequest: null, retryStrategy: (attempt) => Math.min(attempt * 100, 1_000) });
    connection.on('error', () => undefined); // The commands' connection logs outages; one line is enough.
    workerConnections.push(connection);
    return connection;
  };
  let deliveries: Queue | undefined;
  const scheduleRunners: RedisScheduleRunner[] = [];
  try {
    const requirements = { keys };
    const suitability = await assertRedisSuitable(commands, requirements);
    await assertRedisFsync(commands, config.fsync);
    for (const warning of suitability.warnings) logger.warn(warning);
    // The count an earlier version recorded: its `inbound-<p>` and `deliveries-<p>` queues are moved into mailboxes at start.
    const legacyPartitions = Number(suitability.facts.storedPartitions ?? 0) || 0;
    const watch = new RedisSuitabilityWatch({ redis: commands, requirements, everyMs: config.checkEveryMs, logger, warnings: suitability.warnings });
    const queue = new Queue(keys.deliveriesQueue, { connection: commands, prefix: keys.queuePrefix });
    // Its failures reach the caller of each command; an outage is logged once, by the connection's owner.
    queue.on('error', () => undefined);
    deliveries = queue;
    const records = new RedisOutboxRecords({
      redis: commands,
      queue,
      keys,
      deadLetterRetentionMs: options.deadLetterRetentionMs,
      // A process still in the table is reported with its process (ProcessTable.unreported), not as a lost notice.
      processUnreported: async (id) => (await store.processes.get(id)) !== undefined,
    });
    // A lock renewed at a third of the lease, checked for expiry every third: a lost instance's work moves on within the lease.
    const leases = { lockDurationMs: Math.round((config.leaseMs * 2) / 3), stalledIntervalMs: Math.round(config.leaseMs / 3) };
    const turns = new RedisTurnQueue({
      connection: workerConnection,
      keys,
      concurrency: options.concurrency ?? 1,
      legacyPartitions,
      work: config.workers.turns,
      logger,
      ...leases,
    });
    const heartbeat = new InstanceHeartbeat({ redis: commands, keys, instanceId: config.instanceId, leaseMs: config.leaseMs, logger });
    const leaseFactory = redisLeaseFactory({ redis: commands, keys, instanceId: config.instanceId, leaseMs: config.leaseMs, logger });
    const store: RedisStore = RedisStore.open({
      redis: commands,
      keys,
      outbox: records,
      close: async () => {
        await watch.stop();
        await Promise.allSettled(scheduleRunners.splice(0).map((runner) => runner.stop()));
        await heartbeat.stop();
        await queue.close();
        for (const connection of workerConnections.splice(0)) connection.disconnect();
        await commands.quit().catch(() => commands.disconnect());
      },
    });
    return {
      store,
      heartbeat,
      suitability: watch,
      leases: leaseFactory,
      queues: {
        turns,
        deliveries: (parts) => new RedisOutbox({ parts, records, connect: workerConnection, work: config.workers.deliveries, legacyPartitions, ...leases }),
      },
      schedules: (services) => {
        // Runs are worked where turns are: an instance that only accepts or only sends adds and removes jobs.
        const runner = new RedisScheduleRunner({
          services,
          commands,
          connection: workerConnection,
          keys,
          work: config.workers.turns,
          ...leases,
          // What breaks between starts (a job whose BullMQ job was never added, a scheduler stuck) is repaired within a lease, by one instance.
          lease: () => leaseFactory(SCHEDULES_RECONCILE_LEASE),
          reconcileEveryMs: config.leaseMs,
        });
        scheduleRunners.push(runner);
        return runner;
      },
    };
  } catch (error) {
    await deliveries?.close().catch(() => {});
    commands.disconnect();
    throw error;
  }
}
