import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { SpanKind, context, trace, type Span } from '@opentelemetry/api';
import { DelayedError, WaitingError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { settledBy } from '../deadline.js';
import { formatDestination, type Delivery, type DeliveryRecord } from '../session/delivery.js';
import type { DeliveryQueue } from '../deliveries/delivery-queue.js';
import type { OutboxStats } from '../deliveries/outbox-stats.js';
import { afterFailure, cutOffByStop, deliveryAttributes, sendAttempt } from '../deliveries/send-attempt.js';
import { ThreadlineError } from '../errors.js';
import type { DeliveryQueueParts } from '../gateway/gateway-options.js';
import type { Platform } from '../platforms/platform.js';
import { runDetached } from '../session/index.js';
import type { NewDelivery, OutboxPressure, OutboxRecords } from '../store/store.js';
import { threadlineTracer } from '../telemetry/tracer.js';
import { deliveryOf, parseDeliveryJob, type DeliveryJobData } from './delivery-job.js';
import { consumerContext } from './job-context.js';
import { migrateLegacyDeliveryPartitions } from './legacy-delivery-partitions.js';
import { leaseWorkerOptions, logWorkerErrors, type LeaseTimings } from './lease-worker-options.js';
import type { DestinationDrainData, RedisOutboxRecords } from './redis-outbox-records.js';
import { deliveryAcceptedAt } from '../telemetry/delivery-accepted-at.js';
import { DeliveryMinutes } from '../deliveries/delivery-minutes.js';

/** A failure of our own (Redis away) hands the job back after this, so a lasting one cannot spin. */
const HAND_BACK_PAUSE_MS = 1_000;
/** A retry due sooner than this is waited for in the slot; a later one frees the slot (the drain job is delayed). */
const WAIT_IN_SLOT_MS = 1_000;
/** Deliveries a drain job sends before it yields its slot to other destinations (its successor waits at the back). */
const SENDS_PER_DRAIN = 16;
/** How often this instance looks for destinations with work and no drain job; the stalled interval when set. */
const DEFAULT_SWEEP_EVERY_MS = 5_000;
const UNUSABLE_ORIGIN: ReadonlySet<string> = new Set(['TL_SNAPSHOT_INVALID', 'TL_SESSION_INVALID']);
const tracer = threadlineTracer();

export interface RedisOutboxOptions extends LeaseTimings {
  readonly parts: DeliveryQueueParts;
  readonly records: RedisOutboxRecords;
  /** A new connection for a worker, as BullMQ needs it (`maxRetriesPerRequest: null`); closed at stop. */
  readonly connect: () => Redis | Promise<Redis>;
  /** This instance sends deliveries (THREADLINE_WORKERS has deliveries); otherwise it only records them. */
  readonly work: boolean;
  /** The partition count an earlier version recorded: what its `deliveries-<p>` queues hold is moved into mailboxes at start. */
  readonly legacyPartitions?: number;
  /** How often this instance gives a drain job to a destination whose producer died between its push and its add. */
  readonly sweepEveryMs?: number;
}

/** Thrown inside the processor once the job went back to wait: BullMQ then leaves it alone. */
class HandedBack extends WaitingError {}

/** The drain job's lock is another's: nothing more is done under it, not even a hand-back. */
class Fenced extends Error {}

/** What became of the head of a mailbox: sent or given up (`finished`), or `unusable` (kept aside). */
type HeadOutcome = 'finished' | 'unusable';

/**
 * The distributed outbox. The destination (platform, chat, thread) is the unit of order: its
 * deliveries wait in its mailbox and one drain job at a time, cluster-wide, sends them in order
 * (RedisOutboxRecords). Any instance with a free slot (the outbox's maxInFlight, from
 * THREADLINE_CONCURRENCY) drains any destination with work, so sends at once reach the sum of
 * the instances' slots and a slow platform call holds only its own destination. Each step is
 * fenced by the drain job's lock token. Retries happen inside the drain job, backing off as the
 * embedded outbox does; a long wait (Retry-After) delays the drain job and frees its slot. A
 * given-up delivery is kept as a dead letter for `threadline deliveries`.
 */
export class RedisOutbox implements DeliveryQueue {
  private delivered = 0;
  readonly minutes = new DeliveryMinutes();
  private retried = 0;
  private failed = 0;
  private worker: Worker | undefined;
  private readonly connections: Redis[] = [];
  private sweeper: NodeJS.Timeout | undefined;
  private sweeping = false;
  /** Aborted when stop() begins: waits between attempts end and hand their job back. */
  private readonly stopping = new AbortController();
  /** Aborted at stop()'s deadline: sends under way are cut off and handed back. */
  private readonly shutdown = new AbortController();
  private readonly platforms: ReadonlyMap<string, Platform>;
  private readonly logger: Logger;

  constructor(private readonly options: RedisOutboxOptions) {
    this.platforms = options.parts.platforms;
    this.logger = options.parts.logger;
    // Every job in flight listens on these signals: many listeners are expected.
    setMaxListeners(0, this.stopping.signal);
    setMaxListeners(0, this.shutdown.signal);
  }

  /** Records the delivery in its destination's mailbox inside the router's gateway.deliver span; a drain job (of any instance) sends it. */
  async send(delivery: NewDelivery, span: Span): Promise<void> {
    span.setAttribute('messaging.destination.name', this.options.records.queue.name);
    const added = await this.options.records.add(delivery);
    span.setAttribute(added === 'exists' ? 'delivery.replayed' : 'delivery.queued', true);
  }

  /** Recorded as a delivery its drain job fails at once, unsent: a dead letter like any other, listed and retried alike. */
  async refuse(delivery: NewDelivery, reason: string, span: Span): Promise<void> {
    const added = await this.options.records.addRefused(delivery, reason);
    if (added === 'exists') span.setAttribute('delivery.replayed', true);
  }

  /** Moves what an earlier version left in partitions into mailboxes; with `work`, drains up to maxInFlight destinations at once. */
  async start(): Promise<void> {
    const { records } = this.options;
    await migrateLegacyDeliveryPartitions({ ...records.migration, records, count: this.options.legacyPartitions ?? 0, logger: this.logger });
    if (!this.options.work) return;
    const connection = await this.options.connect();
    this.connections.push(connection);
    const worker = new Worker(records.queue.name, (job: Job, token?: string) => runDetached(() => this.process(job, token)), {
      connection,
      prefix: records.queuePrefix,
      concurrency: Math.max(1, this.options.parts.options.maxInFlight),
      ...leaseWorkerOptions(this.options),
    });
    logWorkerErrors(worker, this.logger, 'delivery');
    this.worker = worker;
    const everyMs = this.options.sweepEveryMs ?? this.options.stalledIntervalMs ?? DEFAULT_SWEEP_EVERY_MS;
    this.sweeper = setInterval(() => void this.sweep(everyMs), everyMs);
    this.sweeper.unref();
  }

  /**
   * Stops taking jobs; sends under way get until `deadline`, then are cut off. A delivery not
   * finished stays at the head of its mailbox and its drain job goes back to the front of the
   * queue, its attempts kept, sent next by whichever instance takes it.
   */
  async stop(deadline: number): Promise<void> {
    clearInterval(this.sweeper);
    this.stopping.abort(new Error('the gateway is stopping'));
    const closed = Promise.allSettled(this.worker === undefined ? [] : [this.worker.close()]);
    if (!(await settledBy(closed, deadline))) this.shutdown.abort(new Error('the gateway is stopping'));
    await closed;
    await Promise.allSettled(this.connections.map((connection) => connection.quit()));
    this.worker = undefined;
    this.connections.length = 0;
  }

  /** Every send() has recorded its delivery before it resolved: nothing is left in the background. */
  recorded(): Promise<void> {
    return Promise.resolve();
  }

  stats(): OutboxStats {
    return { delivered: this.delivered, retried: this.retried, failed: this.failed };
  }

  pressure(maxOpenPerDestination: number): Promise<OutboxPressure> {
    return this.options.records.pressure(maxOpenPerDestination);
  }

  list(filter: Parameters<OutboxRecords['list']>[0]): Promise<DeliveryRecord[]> {
    return this.options.records.list(filter);
  }

  /** One drain job, from the root context: the destination's deliveries in order until empty, yielded, delayed or handed back. */
  private async process(job: Job, token: string | undefined): Promise<void> {
    try {
      await this.drain(job, token);
    } catch (error) {
      if (error instanceof WaitingError || error instanceof DelayedError || error instanceof Fenced) throw error;
      // Our own failure (Redis away, most likely), not the platform's: the delivery is not given up for it.
      this.logger.error({ err: error, job: job.id }, 'delivery failed in Redis; it is sent again');
      await sleep(HAND_BACK_PAUSE_MS, undefined, { signal: this.stopping.signal }).catch(() => undefined);
      await this.handBack(job, token);
    }
  }

  /** Sends the deliveries waiting in one destination's mailbox, oldest first, each step fenced by this job's lock. */
  private async drain(job: Job, token: string | undefined): Promise<void> {
    const key = (job.data as Partial<DestinationDrainData> | null)?.key;
    if (typeof key !== 'string' || key === '') throw new Error('a drain job without its destination');
    if (token === undefined || job.id === undefined) throw new Error('a drain job came without its lock token');
    const { records } = this.options;
    const lock = { key, token, lockKey: `${records.queuePrefix}:${records.queue.name}:${job.id}:lock` };
    for (let sends = 0; ; sends++) {
      if (this.stopping.signal.aborted) return this.handBack(job, token);
      const head = await records.mailboxes.peek(key, lock.lockKey, token);
      if (head.fenced) return this.fenced(job);
      // Empty: the job completes; a delivery pushed from now on finds it active or gone, and gets a successor either way.
      if (head.message === undefined) return;
      if (sends === SENDS_PER_DRAIN) return records.wake(key);
      // First head of a job run before (stalled, handed back, delayed): one that died between finishing it and popping it left it there, finished.
      const done = sends === 0 && job.attemptsStarted > 1 && (await records.finished(head.message.id));
      const outcome: HeadOutcome = done ? 'finished' : await this.deliver(job, lock, head.message);
      const left = await records.mailboxes.pop(key, lock.lockKey, token, head.message.id, outcome === 'unusable');
      if (left === 'fenced') return this.fenced(job);
    }
  }

  /** Every attempt of the head of the mailbox until sent or given up; hands the job back at stop, delays it for a long wait. */
  private async deliver(job: Job, lock: { key: string; token: string; lockKey: string }, message: { id: string; data: string }): Promise<HeadOutcome> {
    const parsed = parseDeliveryJob(readJson(message.data));
    if (!('job' in parsed)) {
      this.failed++;
      this.logger.error({ delivery: message.id, keptIn: this.options.records.mailboxes.unusable, problem: parsed.problem }, 'a waiting delivery is damaged and can never be sent; it is kept aside and its destination goes on');
      return 'unusable';
    }
    let data = parsed.job;
    if (data.refused !== undefined) return this.giveUp(message.id, data, data.refused, {});
    let resumed: ReturnType<typeof consumerContext>;
    try {
      resumed = consumerContext(data.context);
    } catch (error) {
      if (!(error instanceof ThreadlineError) || !UNUSABLE_ORIGIN.has(error.code)) throw error;
      // A damaged routing snapshot can never be resumed, so the delivery can never be sent.
      return this.giveUp(message.id, data, error.message, { err: error });
    }
    for (;;) {
      // A retry's wait survives a hand-back: whoever runs the job next waits out what is left.
      const wait = data.dueAt === undefined ? 0 : data.dueAt - Date.now();
      if (wait > WAIT_IN_SLOT_MS) return this.delay(job, lock.token, data.dueAt!);
      if (wait > 0) {
        const waited = await sleep(wait, true, { signal: this.stopping.signal }).catch(() => false);
        if (!waited) return this.handBack(job, lock.token);
      }
      if (this.stopping.signal.aborted) return this.handBack(job, lock.token);
      const delivery = deliveryOf(data);
      const span = tracer.startSpan(
        'gateway.deliver',
        { kind: SpanKind.CONSUMER, links: resumed.links, attributes: { ...deliveryAttributes(delivery, delivery.attempts + 1), 'messaging.destination.name': job.queueName } },
        resumed.context,
      );
      try {
        const error = await context.with(trace.setSpan(resumed.context, span), () => sendAttempt(this.platforms, delivery, span, this.shutdown.signal));
        if (error === undefined) {
          await this.options.records.finish(message.id, 'done', JSON.stringify(data));
          this.delivered++;
          this.minutes.record(Date.now(), deliveryAcceptedAt(delivery));
          this.options.parts.metrics.sent(this.platformLabel(delivery), delivery);
          return 'finished';
        }
        // Cut off by stop(), not refused: the job goes back to the front, no attempt counts.
        if (cutOffByStop(error, this.shutdown.signal)) return this.handBack(job, lock.token);
        const next = afterFailure(delivery, error, this.options.parts.options);
        if (next.action === 'give up') return this.giveUp(message.id, { ...data, attempts: next.attempt }, next.reason, { err: error, attempts: next.attempt });
        data = { ...data, attempts: next.attempt, dueAt: next.dueAt, lastError: error.message };
        if (!(await this.options.records.mailboxes.rewrite(lock.key, lock.lockKey, lock.token, message.id, JSON.stringify(data)))) return this.fenced(job);
        this.retried++;
        this.options.parts.metrics.retry(this.platformLabel(delivery), delivery.kind);
      } finally {
        span.end();
      }
    }
  }

  /** Gives up: counted closed, logged, kept as a dead letter with the reason. */
  private async giveUp(id: string, data: DeliveryJobData, reason: string, fields: Record<string, unknown>): Promise<'finished'> {
    await this.options.records.finish(id, 'failed', JSON.stringify(data), reason);
    this.failed++;
    const delivery = deliveryOf(data);
    this.options.parts.metrics.delivery(this.platformLabel(delivery), delivery.kind, 'dead_letter');
    this.logger.error({ ...fields, delivery: delivery.id, destination: formatDestination(delivery.destination) }, 'delivery failed for good; `threadline deliveries list --failed` shows it');
    return 'finished';
  }

  /** The job's lock is another's (its lease lapsed here): that instance drains the destination now, this one stops. */
  private fenced(job: Job): never {
    this.logger.warn({ queue: job.queueName, job: job.id }, 'a drain job lost its lock; another instance drains its destination');
    throw new Fenced('the drain job lost its lock: another instance drains its destination');
  }

  /** Back to the front of the queue, unfinished: never completed nor failed; the delivery stays at the head of its mailbox. */
  private async handBack(job: Job, token: string | undefined): Promise<never> {
    await job.moveToWait(token);
    throw new HandedBack(`drain job ${job.id ?? ''} handed back`);
  }

  /** The drain job waits in BullMQ's delayed set until `dueAt`, freeing its slot; an add meanwhile is folded into it. */
  private async delay(job: Job, token: string, dueAt: number): Promise<never> {
    await job.moveToDelayed(dueAt, token);
    throw new DelayedError();
  }

  /** Gives a drain job to each destination with work that has none (a producer died between its push and its add). */
  private async sweep(everyMs: number): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      const { records } = this.options;
      const stuck = await records.mailboxes.stuck(records.queue.name, Date.now() - everyMs);
      for (const key of stuck) await records.wake(key);
      if (stuck.length > 0) this.logger.warn({ destinations: stuck.length }, 'gave destinations with waiting deliveries the drain job they lacked');
    } catch (error) {
      this.logger.warn({ err: error }, 'could not look for destinations without a drain job; trying again at the next sweep');
    } finally {
      this.sweeping = false;
    }
  }

  /** The platform as a metric attribute: only names of enabled platforms, so a stored oddity cannot add series. */
  private platformLabel(delivery: Pick<Delivery, 'destination'>): string {
    return this.platforms.has(delivery.destination.platform) ? delivery.destination.platform : 'unknown';
  }
}

function readJson(data: string): unknown {
  try {
    return JSON.parse(data) as unknown;
  } catch {
    return undefined;
  }
}
