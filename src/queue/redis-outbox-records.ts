import type { Job, JobType, KeepJobs, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { formatDestination, type DeliveryRecord, type DeliveryStatus, type Destination } from '../session/delivery.js';
import { getSession, type RoutingSnapshot } from '../session/index.js';
import type { RedisKeys } from '../store/redis/redis-keys.js';
import {
  MAX_STATE_IDS,
  type AddOutcome,
  type DeliveryState,
  type NewDelivery,
  type OutboxPressure,
  type OutboxRecords,
  type OverdueQuery,
} from '../store/store.js';
import { deliveryJobId, deliveryOf, parseDeliveryJob, type DeliveryJobData } from './delivery-job.js';
import { jobContextOf, type JobContext } from './job-context.js';
import { OutboxMarkers } from './outbox-markers.js';
import { partitionOf } from './partition.js';

/** How long done deliveries stay listed, as the embedded store keeps its done rows: a day. */
export const DONE_RETENTION_MS = 24 * 60 * 60 * 1000;
/** Done jobs kept per partition at most, whatever their age: a busy chat cannot fill Redis with its history. */
const DONE_KEPT_PER_PARTITION = 10_000;
/** Jobs read from Redis at a time while listing: memory stays bounded however many are kept. */
const PAGE = 500;
/** BullMQ's name for every delivery job; the queue says what it is. */
export const DELIVERY_JOB_NAME = 'delivery';

const OPEN_TYPES: JobType[] = ['active', 'wait', 'prioritized', 'delayed'];

export interface RedisOutboxRecordsOptions {
  /** For the outbox's own commands (markers and counters). */
  readonly redis: Redis;
  /** The BullMQ queue of a partition (DeliveryQueues.queue). */
  readonly queue: (index: number) => Queue;
  readonly keys: RedisKeys;
  readonly partitions: number;
  /** How long a dead letter is kept (THREADLINE_DEAD_LETTER_RETENTION_MS). */
  readonly deadLetterRetentionMs: number;
  /** How long a done delivery is kept, for listing and replays; default a day. */
  readonly doneRetentionMs?: number;
  /**
   * True when a process of the terminal tool is still in the process table unreported: its
   * completion notice (`proc:<id>:done`) is then left out of overdue(), as ProcessTable.unreported reports it.
   */
  readonly processUnreported?: (processId: string) => Promise<boolean>;
}

/**
 * The distributed outbox's records: each delivery is a BullMQ job in its destination's
 * partition queue (`deliveries-<p>`), with a marker beside it (OutboxMarkers) that makes a
 * second add of one id a no-op and keeps the open-delivery counters. The queues' workers
 * (RedisOutbox) send; this answers everything else the gateway and the CLI ask of an outbox.
 */
export class RedisOutboxRecords implements OutboxRecords {
  private readonly markers: OutboxMarkers;
  private readonly doneRetentionMs: number;

  constructor(private readonly options: RedisOutboxRecordsOptions) {
    this.markers = new OutboxMarkers(options.redis, options.keys);
    this.doneRetentionMs = options.doneRetentionMs ?? DONE_RETENTION_MS;
  }

  get partitions(): number {
    return this.options.partitions;
  }

  /** BullMQ's prefix of the queues, for their workers. */
  get queuePrefix(): string {
    return this.options.keys.queuePrefix;
  }

  /** The queue of partition `index`. */
  queue(index: number): Queue {
    return this.options.queue(index);
  }

  /** The queue of `destination`'s partition: all its deliveries go there, so they keep their order. */
  queueOf(destination: Destination): Queue {
    return this.options.queue(partitionOf(formatDestination(destination), this.options.partitions));
  }

  /**
   * A worker finished the job: no longer counted open; its marker kept as long as the job is.
   * A second finish of one job (run again after a crash) changes nothing.
   */
  async finish(job: Job, state: 'done' | 'failed'): Promise<void> {
    const retention = state === 'done' ? this.doneRetentionMs : this.options.deadLetterRetentionMs;
    await this.markers.move(job.id ?? '', state, retention);
  }

  /**
   * Queues the delivery as a job of its destination's partition: 'queued', or 'exists' when
   * its id was recorded before (nothing changes). Never 'claimed': the queue's workers send.
   */
  add(delivery: NewDelivery): Promise<AddOutcome> {
    return this.addJob(delivery, undefined);
  }

  /** Queues a delivery that must not be sent: its worker fails it at once (a dead letter). 'exists' as add(). */
  addRefused(delivery: NewDelivery, reason: string): Promise<AddOutcome> {
    return this.addJob(delivery, reason);
  }

  private async addJob(delivery: NewDelivery, refused: string | undefined): Promise<AddOutcome> {
    const field = formatDestination(delivery.destination);
    const partition = partitionOf(field, this.options.partitions);
    const jobId = deliveryJobId(delivery.id);
    const { created, state } = await this.markers.create(jobId, partition, field);
    if (!created && state !== 'open') return 'exists';
    const data: DeliveryJobData = {
      ...delivery,
      attempts: 0,
      attemptsSince: delivery.createdAt,
      context: producerContext(delivery.origin),
      ...(refused === undefined ? {} : { refused }),
    };
    // Also for a marker found open: an add cut off between the marker and its job left no job; BullMQ ignores a second add of one id.
    await this.options.queue(partition).add(DELIVERY_JOB_NAME, data, {
      jobId,
      attempts: 1,
      removeOnComplete: { age: seconds(this.doneRetentionMs), count: DONE_KEPT_PER_PARTITION },
      removeOnFail: keepFor(this.options.deadLetterRetentionMs),
    });
    return created ? 'queued' : 'exists';
  }

  /** Makes failed deliveries (one by id, or all) pending again at the back of their partition, with a fresh series of attempts. */
  async retryFailed(id: string | undefined): Promise<number> {
    if (id !== undefined) return (await this.retryOne(id)) ? 1 : 0;
    let retried = 0;
    for (let partition = 0; partition < this.options.partitions; partition++) {
      const queue = this.options.queue(partition);
      // Retried jobs leave the failed set; ones that could not be retried are stepped over.
      let skipped = 0;
      for (;;) {
        const jobs = (await queue.getJobs(['failed'], skipped, skipped + PAGE - 1)) as Job[];
        if (jobs.length === 0) break;
        for (const job of jobs) {
          if (await this.retryJob(job)) retried++;
          else skipped++;
        }
      }
    }
    return retried;
  }

  async list(filter: { readonly failedOnly?: boolean; readonly chatId?: string; readonly limit: number }): Promise<DeliveryRecord[]> {
    const types: JobType[] = filter.failedOnly === true ? ['failed'] : [...OPEN_TYPES, 'completed', 'failed'];
    const newest = new Newest<DeliveryRecord>(filter.limit, (a, b) => b.createdAt - a.createdAt || compare(b.id, a.id));
    for (let partition = 0; partition < this.options.partitions; partition++) {
      for (const type of types) {
        // Each list is read newest first; once `limit` of it match, older ones cannot make the cut.
        let matched = 0;
        await this.scan(partition, type, (job) => {
          const record = toRecord(job, type);
          if (record === undefined || (filter.chatId !== undefined && record.destination.chatId !== filter.chatId)) return true;
          newest.add(record);
          return ++matched < filter.limit;
        });
      }
    }
    return newest.sorted();
  }

  /** From the counters; the oldest open delivery from each partition's running and next job, so it costs two reads a partition. */
  async pressure(maxOpenPerDestination: number): Promise<OutboxPressure> {
    const { redis, keys } = this.options;
    const [total, counts] = await Promise.all([redis.get(keys.openDeliveriesTotal), redis.hvals(keys.openDeliveries)]);
    let oldestOpenSince: number | undefined;
    for (let partition = 0; partition < this.options.partitions; partition++) {
      const queue = this.options.queue(partition);
      const [active, next] = await Promise.all([queue.getJobs(['active'], 0, 0), queue.getJobs(['wait'], 0, 0, true)]);
      for (const job of [...active, ...next]) {
        const since = (job.data as Partial<DeliveryJobData> | undefined)?.attemptsSince;
        if (typeof since === 'number' && (oldestOpenSince === undefined || since < oldestOpenSince)) oldestOpenSince = since;
      }
    }
    return {
      open: Math.max(0, Number(total ?? 0)),
      fullDestinations: counts.filter((count) => Number(count) >= maxOpenPerDestination).length,
      oldestOpenSince,
    };
  }

  async overdue(query: OverdueQuery): Promise<DeliveryState[]> {
    const filtered = query.chatId !== undefined || query.threadId !== undefined;
    const newest = new Newest<DeliveryState>(query.limit, (a, b) => b.attemptsSince - a.attemptsSince || compare(b.id, a.id));
    const candidates: DeliveryState[] = [];
    for (let partition = 0; partition < this.options.partitions; partition++) {
      for (const type of [...OPEN_TYPES, 'failed'] as JobType[]) {
        await this.scan(partition, type, (job) => {
          const state = toState(job, type);
          if (state === undefined || state.attemptsSince >= query.before) return true;
          if (filtered && !destinationMatches(state.destination, query) && !originMatches(state.origin, query)) return true;
          candidates.push(state);
          return true;
        });
        for (const state of await this.withoutUnreportedNotices(candidates.splice(0))) newest.add(state);
      }
    }
    return newest.sorted();
  }

  async states(ids: readonly string[]): Promise<Map<string, DeliveryStatus>> {
    const states = new Map<string, DeliveryStatus>();
    for (let start = 0; start < ids.length; start += MAX_STATE_IDS) {
      const chunk = ids.slice(start, start + MAX_STATE_IDS);
      const markers = await this.markers.read(chunk.map(deliveryJobId));
      await Promise.all(
        chunk.map(async (id, index) => {
          const marker = markers[index];
          if (marker === undefined) return;
          if (marker.state !== 'open') {
            states.set(id, marker.state);
            return;
          }
          const jobState = await this.options.queue(marker.partition % this.options.partitions).getJobState(deliveryJobId(id));
          states.set(id, jobState === 'unknown' ? 'pending' : statusOf(jobState));
        }),
      );
    }
    return states;
  }

  /** The failed job of delivery `id`, made pending again; false when there is none. */
  private async retryOne(id: string): Promise<boolean> {
    const jobId = deliveryJobId(id);
    const [marker] = await this.markers.read([jobId]);
    // Its marker names its partition; without one (expired), every partition is asked.
    const partitions = marker !== undefined ? [marker.partition % this.options.partitions] : [...Array(this.options.partitions).keys()];
    for (const partition of partitions) {
      const job = (await this.options.queue(partition).getJob(jobId)) as Job | undefined;
      if (job !== undefined) return this.retryJob(job);
    }
    return false;
  }

  /** A failed job back to wait with a fresh series of attempts, then counted open again. */
  private async retryJob(job: Job): Promise<boolean> {
    if ((await job.getState()) !== 'failed' || job.id === undefined) return false;
    const parsed = parseDeliveryJob(job.data);
    if ('job' in parsed) {
      // Retried by hand, a refused delivery is sent: the operator decided.
      const { dueAt: _dueAt, lastError: _lastError, refused: _refused, ...data } = parsed.job;
      await job.updateData({ ...data, attempts: 0, attemptsSince: Date.now() });
    }
    try {
      await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
    } catch {
      // Retried by someone else meanwhile, or pruned: not ours to count.
      return false;
    }
    // After the retry, not before: a job that runs with its marker still failed finishes without touching the counters.
    await this.markers.move(job.id, 'open', undefined);
    return true;
  }

  /** Visits the jobs of one state of one partition, newest first, a page at a time, while `visit` says go on. */
  private async scan(partition: number, type: JobType, visit: (job: Job) => boolean): Promise<void> {
    const queue = this.options.queue(partition);
    for (let start = 0; ; start += PAGE) {
      const jobs = (await queue.getJobs([type], start, start + PAGE - 1)) as Job[];
      for (const job of jobs) if (job !== undefined && !visit(job)) return;
      if (jobs.length < PAGE) return;
    }
  }

  private async withoutUnreportedNotices(states: DeliveryState[]): Promise<DeliveryState[]> {
    const unreported = this.options.processUnreported;
    if (unreported === undefined) return states;
    const kept: DeliveryState[] = [];
    for (const state of states) {
      const process = /^proc:(.+):done$/.exec(state.id)?.[1];
      if (process === undefined || !(await unreported(process))) kept.push(state);
    }
    return kept;
  }
}

/** The context a job carries: the active one inside a session (the router's span), else the origin's routing with no span. */
function producerContext(origin: RoutingSnapshot): JobContext {
  return getSession() === undefined ? { routing: origin, carrier: {} } : jobContextOf(undefined, origin);
}

/** A BullMQ job state as threadline names it. */
export function statusOf(state: string): DeliveryStatus {
  switch (state) {
    case 'active':
      return 'sending';
    case 'completed':
      return 'done';
    case 'failed':
      return 'failed';
    default:
      return 'pending';
  }
}

function toRecord(job: Job, type: JobType): DeliveryRecord | undefined {
  const parsed = parseDeliveryJob(job.data);
  if (!('job' in parsed)) return undefined;
  const data = parsed.job;
  const status = statusOf(type);
  const lastError = status === 'failed' ? job.failedReason || data.lastError : data.lastError;
  const finished = status === 'done' || status === 'failed';
  return {
    ...deliveryOf(data),
    status,
    dueAt: data.dueAt ?? data.attemptsSince,
    ...(lastError === undefined || lastError === '' ? {} : { lastError }),
    ...(finished && job.finishedOn !== undefined ? { finishedAt: job.finishedOn } : {}),
  };
}

function toState(job: Job, type: JobType): DeliveryState | undefined {
  const record = toRecord(job, type);
  if (record === undefined) return undefined;
  const origin = record.origin as unknown;
  return {
    id: record.id,
    kind: record.kind,
    status: record.status,
    destination: formatDestination(record.destination),
    origin: typeof origin === 'object' && origin !== null && (origin as { v?: unknown }).v === 1 ? (origin as RoutingSnapshot) : undefined,
    attempts: record.attempts,
    attemptsSince: record.attemptsSince,
    dueAt: record.dueAt,
    ...(record.lastError === undefined ? {} : { lastError: record.lastError }),
    ...(record.finishedAt === undefined ? {} : { finishedAt: record.finishedAt }),
  };
}

/** As the embedded store matches: the destination's chat, and its thread when one is asked. */
function destinationMatches(destination: string, query: OverdueQuery): boolean {
  const [, chat, thread] = destination.split(':').map((part) => safeDecode(part));
  return (query.chatId === undefined || chat === query.chatId) && (query.threadId === undefined || thread === query.threadId);
}

function originMatches(origin: RoutingSnapshot | undefined, query: OverdueQuery): boolean {
  if (origin === undefined) return false;
  return (query.chatId === undefined || origin.session.chatId === query.chatId) && (query.threadId === undefined || origin.session.threadId === query.threadId);
}

function safeDecode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function seconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/** Dead letters kept per partition at most, however young. */
const DEAD_LETTERS_KEPT = 10_000;

/** BullMQ's removeOnFail for a retention: none kept when it is 0. */
function keepFor(ms: number): KeepJobs | boolean {
  // Bounded by count as well: a flood of dead letters must not fill a noeviction Redis.
  return ms <= 0 ? true : { age: seconds(ms), count: DEAD_LETTERS_KEPT };
}

/** The first `limit` of what is added, by `order`, in bounded memory. */
class Newest<T> {
  private items: T[] = [];

  constructor(
    private readonly limit: number,
    private readonly order: (a: T, b: T) => number,
  ) {}

  add(item: T): void {
    this.items.push(item);
    if (this.items.length >= this.limit * 2) this.items = this.sorted();
  }

  sorted(): T[] {
    return this.items.sort(this.order).slice(0, this.limit);
  }
}
