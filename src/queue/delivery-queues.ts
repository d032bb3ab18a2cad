import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { RedisKeys } from '../store/redis/redis-keys.js';

/**
 * The BullMQ queues `deliveries-<p>` of every partition, made on first use over one shared
 * connection (commands only: the workers block on connections of their own).
 */
export class DeliveryQueues {
  private readonly queues = new Map<number, Queue>();

  constructor(
    private readonly connection: Redis,
    private readonly keys: RedisKeys,
    readonly partitions: number,
  ) {}

  /** The queue of partition `index`. */
  queue(index: number): Queue {
    let queue = this.queues.get(index);
    if (queue === undefined) {
      queue = new Queue(this.keys.deliveryQueue(index), { connection: this.connection, prefix: this.keys.queuePrefix });
      // Its failures reach the caller of each command; an outage is logged once, by the connection's owner.
      queue.on('error', () => undefined);
      this.queues.set(index, queue);
    }
    return queue;
  }

  /** Closes the queues made so far; the shared connection stays its owner's to close. */
  async close(): Promise<void> {
    const queues = [...this.queues.values()];
    this.queues.clear();
    await Promise.all(queues.map((queue) => queue.close()));
  }
}
