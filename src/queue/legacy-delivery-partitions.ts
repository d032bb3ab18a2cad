import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { RedisKeys } from '../store/redis/redis-keys.js';
import { luaScript } from '../store/redis/redis-scripts.js';
import type { RedisOutboxRecords } from './redis-outbox-records.js';

/** The lease on the move: held this long unrenewed, so a starter that died mid-move is taken over. */
const LEASE_MS = 30_000;
/** How often a starter waiting for another's move looks again. */
const WAIT_STEP_MS = 100;
const RELEASE_LUA = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

export interface LegacyDeliveryPartitionsOptions {
  readonly redis: Redis;
  readonly keys: RedisKeys;
  readonly records: RedisOutboxRecords;
  /** The partition count an earlier version recorded (`<prefix>:config:partitions`); 0 when none did. */
  readonly count: number;
  readonly logger: Logger;
}

/**
 * Moves what an earlier version left in its delivery partitions (`deliveries-<p>`) into the
 * destinations' mailboxes, once, under a lease (`<prefix>:outbox:migrating`): the job a dead
 * instance held first, then the waiting ones oldest first, each keeping its attempts and due
 * time; dead letters stay dead letters; then the old queues are removed. A starter finding the
 * lease held waits for it to end, so no instance records a new delivery ahead of an older one.
 * A move cut short is taken up again: a mailbox and a marker take each id once.
 */
export async function migrateLegacyDeliveryPartitions(options: LegacyDeliveryPartitionsOptions): Promise<void> {
  const names = Array.from({ length: options.count }, (_, index) => options.keys.legacyDeliveryQueue(index));
  if (names.length === 0) return;
  const lease = options.keys.key('outbox', 'migrating');
  const token = randomUUID();
  for (;;) {
    const left = await legacyQueuesLeft(options, names);
    if (left.length === 0) return;
    if ((await options.redis.set(lease, token, 'PX', LEASE_MS, 'NX')) === 'OK') {
      try {
        for (const name of left) await moveQueue(options, name);
      } finally {
        await luaScript(options.redis, 'threadlineReleaseLock', RELEASE_LUA)([lease], [token]);
      }
      return;
    }
    await sleep(WAIT_STEP_MS);
  }
}

async function legacyQueuesLeft(options: LegacyDeliveryPartitionsOptions, names: readonly string[]): Promise<string[]> {
  const { keys } = options;
  const pipeline = options.redis.pipeline();
  for (const name of names) pipeline.exists(`${keys.queuePrefix}:${name}:meta`, `${keys.queuePrefix}:${name}:wait`, `${keys.queuePrefix}:${name}:id`);
  const answers = (await pipeline.exec()) ?? [];
  return names.filter((_, index) => {
    const [error, value] = answers[index] ?? [null, 0];
    if (error) throw error;
    return (value as number) > 0;
  });
}

async function moveQueue(options: LegacyDeliveryPartitionsOptions, name: string): Promise<void> {
  const { records, keys } = options;
  const queue = new Queue(name, { connection: options.redis, prefix: keys.queuePrefix });
  queue.on('error', () => undefined);
  try {
    // The order it would have run in: the job a dead instance held, then the waiting ones oldest first.
    const open = [...(await queue.getJobs(['active'], 0, -1, true)), ...(await queue.getJobs(['wait', 'prioritized', 'delayed'], 0, -1, true))];
    const destinations = new Set<string>();
    let moved = 0;
    for (const job of open as Job[]) {
      const key = await records.adopt(job.id ?? '', job.data);
      if (key !== undefined) {
        destinations.add(key);
        moved++;
      }
    }
    let dead = 0;
    for (const job of (await queue.getJobs(['failed'], 0, -1, true)) as Job[]) {
      if (await records.adoptDeadLetter(job.id ?? '', job.data, job.failedReason)) dead++;
    }
    for (const key of destinations) await records.wake(key);
    await queue.obliterate({ force: true });
    options.logger.warn({ queue: name, deliveries: moved, deadLetters: dead }, 'moved the deliveries of a partition of an earlier version into mailboxes');
  } finally {
    await queue.close();
  }
}
