import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { deliveryJobId, type DeliveryJobData } from '../../src/queue/delivery-job.js';
import { OutboxMarkers } from '../../src/queue/outbox-markers.js';
import { formatDestination } from '../../src/session/delivery.js';
import { RedisKeys } from '../../src/store/redis/redis-keys.js';
import { until } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';
import { FakePlatform, delivery, instance, type Instance } from './redis-outbox-support.js';

const redis = useRedis();
const cleanups: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A delivery as an earlier version queued it: a job of its partition, with its marker counted open. */
async function legacyJob(queue: Queue, markers: OutboxMarkers, id: string, chat: string, extra: Partial<DeliveryJobData> = {}): Promise<string> {
  const made = delivery(id, chat);
  const data: DeliveryJobData = { ...made, attempts: 0, attemptsSince: made.createdAt, context: { routing: made.origin, carrier: {} }, ...extra };
  const jobId = deliveryJobId(id);
  await markers.create(jobId, formatDestination(made.destination));
  await queue.add('delivery', data, { jobId });
  return jobId;
}

describe('the delivery partitions of an earlier version', () => {
  it('move into the mailboxes once, at start, each destination in its order, dead letters kept', async () => {
    const prefix = redis.prefix();
    const keys = new RedisKeys(prefix);
    const connection = new Redis(redis.url);
    cleanups.push(async () => connection.quit());
    const markers = new OutboxMarkers(connection, keys);
    const partition = (index: number): Queue => {
      const queue = new Queue(keys.legacyDeliveryQueue(index), { connection, prefix: keys.queuePrefix });
      cleanups.push(async () => queue.close());
      return queue;
    };
    const [zero, one] = [partition(0), partition(1)];
    // Chat A: a1 taken by an instance that died (active) after a failed attempt, a2 and a3 waiting; chat B and a dead letter in another partition.
    await legacyJob(zero, markers, 'a1', 'A', { attempts: 1, lastError: 'webhook answered 503' });
    await connection.lmove(`${keys.queuePrefix}:${zero.name}:wait`, `${keys.queuePrefix}:${zero.name}:active`, 'RIGHT', 'LEFT');
    await legacyJob(zero, markers, 'a2', 'A');
    await legacyJob(zero, markers, 'a3', 'A');
    await legacyJob(one, markers, 'b1', 'B');
    const dead = await legacyJob(one, markers, 'x1', 'X');
    await connection.lrem(`${keys.queuePrefix}:${one.name}:wait`, 0, dead);
    await connection.zadd(`${keys.queuePrefix}:${one.name}:failed`, Date.now(), dead);
    await connection.hset(`${keys.queuePrefix}:${one.name}:${dead}`, 'failedReason', 'webhook answered 400 (refused)', 'finishedOn', Date.now());
    await connection.hset(markers.key(dead), 'state', 'failed');
    await connection.hincrby(keys.openDeliveries, 'webhook:X', -1);
    await connection.decr(keys.openDeliveriesTotal);

    const platform = new FakePlatform();
    const open = (name: string): Instance => {
      const made = instance({ url: redis.url, prefix, platform, name, legacyPartitions: 4 });
      cleanups.push(() => made.close());
      return made;
    };
    // Two instances start at once: one moves under the lease, the other waits for it; each delivery moves once.
    const [a, b] = [open('a'), open('b')];
    await Promise.all([a.outbox.start(), b.outbox.start()]);
    // Recorded after a start: behind what was moved.
    await b.records.add(delivery('a4', 'A'));
    await until(() => platform.sentTo('A').length === 4 && platform.sentTo('B').length === 1);
    expect(platform.sentTo('A')).toEqual(['a1', 'a2', 'a3', 'a4']);
    expect(platform.sentTo('B')).toEqual(['b1']);
    expect(await connection.exists(`${keys.queuePrefix}:${zero.name}:meta`, `${keys.queuePrefix}:${one.name}:meta`, `${keys.queuePrefix}:${zero.name}:wait`)).toBe(0);

    const [letter] = await a.records.list({ limit: 5, failedOnly: true });
    expect(letter).toMatchObject({ id: 'x1', status: 'failed', lastError: 'webhook answered 400 (refused)' });
    expect(await a.records.retryFailed('x1')).toBe(1);
    await until(() => platform.sentTo('X').length === 1);
    // Each sent once, by whichever instance.
    expect(platform.seen.filter((send) => send.ok).map((send) => send.message.id).sort()).toEqual(['a1', 'a2', 'a3', 'a4', 'b1', 'x1']);
    await until(async () => (await a.records.pressure(1)).open === 0);
    expect(await connection.get(keys.openDeliveriesTotal)).toBeNull();
    expect((await a.records.list({ limit: 10 })).find((record) => record.id === 'a1')).toMatchObject({ status: 'done', attempts: 1 });
  });
});
