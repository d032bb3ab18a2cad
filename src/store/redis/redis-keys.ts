import { formatDestination, type Destination } from '../../session/delivery.js';

/**
 * The names threadline uses in Redis, all under one prefix (THREADLINE_REDIS_PREFIX), so
 * gateways of several deployments, or several tests, can share one Redis. Keys read by more
 * than one module are named here; a module's private keys are named in that module from `key()`.
 */
export class RedisKeys {
  constructor(readonly prefix: string) {}

  /** A key of threadline's own: `<prefix>:<parts joined by ':'>`. */
  key(...parts: string[]): string {
    return [this.prefix, ...parts].join(':');
  }

  /** BullMQ's prefix for threadline's queues. */
  get queuePrefix(): string {
    return this.key('q');
  }

  /** The queue of the conversations' drain jobs: at most one running and one waiting per conversation (its messages wait in its mailbox). */
  get turnsQueue(): string {
    return 'turns';
  }

  /** The inbound queue of partition `index` of versions before mailboxes: moved into mailboxes at start. */
  legacyInboundQueue(index: number): string {
    return `inbound-${index}`;
  }

  /** The queue of the destinations' drain jobs: at most one running and one waiting per destination (its deliveries wait in its mailbox). */
  get deliveriesQueue(): string {
    return 'deliveries';
  }

  /** The delivery queue of partition `index` of versions before mailboxes: moved into mailboxes at start. */
  legacyDeliveryQueue(index: number): string {
    return `deliveries-${index}`;
  }

  /** The queue of reminders' and cron jobs' runs: one job scheduler per cron job, one delayed job per due run. */
  get schedulesQueue(): string {
    return 'schedules';
  }

  /** Hash: destination (formatDestination) → deliveries recorded and not yet done or failed. */
  get openDeliveries(): string {
    return this.key('outbox', 'open');
  }

  /** Counter: deliveries recorded and not yet done or failed, all destinations. */
  get openDeliveriesTotal(): string {
    return this.key('outbox', 'open-total');
  }

  /** The field of `destination` in openDeliveries. */
  openField(destination: Destination): string {
    return formatDestination(destination);
  }

  /** The partition count the data was written with: a gateway with another count refuses to start. */
  get partitions(): string {
    return this.key('config', 'partitions');
  }
}
