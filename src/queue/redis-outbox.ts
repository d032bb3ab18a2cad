import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { SpanKind, context, trace, type Span } from '@opentelemetry/api';
import { UnrecoverableError, WaitingError, Worker, type Job } from 'bullmq';
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
import { deliveryOf, parseDeliveryJob } from './delivery-job.js';
import { consumerContext } from './job-context.js';
import { leaseWorkerOptions, logWorkerErrors, type LeaseTimings } from './lease-worker-options.js';
import type { RedisOutboxRecords } from './redis-outbox-records.js';

/** A failure of our own (Redis away) hands the job back after this, so a lasting one cannot spin. */
const HAND_BACK_PAUSE_MS = 1_000;
const UNUSABLE_ORIGIN: ReadonlySet<string> = new Set(['TL_SNAPSHOT_INVALID', 'TL_SESSION_INVALID']);
const tracer = threadlineTracer();

export interface RedisOutboxOptions extends LeaseTimings {
  readonly parts: DeliveryQueueParts;
  readonly records: RedisOutboxRecords;
  /** A new connection for a worker, as BullMQ needs it (`maxRetriesPerRequest: null`); closed at stop. */
  readonly connect: () => Redis | Promise<Redis>;
  /** This instance sends deliveries (THREADLINE_WORKERS has deliveries); otherwise it only records them. */
  readonly work: boolean;
}

/** Thrown inside the processor once the job went back to wait: BullMQ then leaves it alone. */
class HandedBack extends WaitingError {}

/**
 * The distributed outbox: deliveries are jobs of BullMQ partition queues on Redis (one
 * destination, one partition, run one job at a time across every instance), so a chat keeps
 * its order whichever instance sends. Retries happen inside the job, backing off as the
 * embedded outbox does, since BullMQ's own retries would let later deliveries of the chat pass.
 * A given-up delivery stays a failed job: a dead letter for `threadline deliveries`.
 */
export class RedisOutbox implements DeliveryQueue {
  private delivered = 0;
  private retried = 0;
  private failed = 0;
  private readonly workers: Worker[] = [];
  private readonly connections: Redis[] = [];
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

  /** Records the delivery as a job inside the router's gateway.deliver span; a worker (of any instance) sends it. */
  async send(delivery: NewDelivery, span: Span): Promise<void> {
    span.setAttribute('messaging.destination.name', this.options.records.queueOf(delivery.destination).name);
    const added = await this.options.records.add(delivery);
    span.setAttribute(added === 'exists' ? 'delivery.replayed' : 'delivery.queued', true);
  }

  /** Recorded as a job its worker fails at once, unsent: a dead letter like any other, listed and retried alike. */
  async refuse(delivery: NewDelivery, reason: string, span: Span): Promise<void> {
    const added = await this.options.records.addRefused(delivery, reason);
    if (added === 'exists') span.setAttribute('delivery.replayed', true);
  }

  /** With `work`: one worker per partition, each partition one job at a time across every instance. */
  async start(): Promise<void> {
    if (!this.options.work) return;
    const { records } = this.options;
    for (let partition = 0; partition < records.partitions; partition++) {
      const queue = records.queue(partition);
      await queue.setGlobalConcurrency(1);
      const connection = await this.options.connect();
      this.connections.push(connection);
      const worker = new Worker(queue.name, (job: Job, token?: string) => runDetached(() => this.process(job, token)), {
        connection,
        prefix: records.queuePrefix,
        concurrency: 1,
        ...leaseWorkerOptions(this.options),
      });
      logWorkerErrors(worker, this.logger, 'delivery');
      this.workers.push(worker);
    }
  }

  /**
   * Stops taking jobs; sends under way get until `deadline`, then are cut off. A job not
   * finished goes back to the front of its partition, its attempts kept, and is sent next by
   * whichever instance runs the partition.
   */
  async stop(deadline: number): Promise<void> {
    this.stopping.abort(new Error('the gateway is stopping'));
    const closed = Promise.allSettled(this.workers.map((worker) => worker.close()));
    if (!(await settledBy(closed, deadline))) this.shutdown.abort(new Error('the gateway is stopping'));
    await closed;
    await Promise.allSettled(this.connections.map((connection) => connection.quit()));
    this.workers.length = 0;
    this.connections.length = 0;
  }

  /** Every send() has recorded its job before it resolved: nothing is left in the background. */
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

  /** One job, from the root context: every attempt until sent, given up, or handed back at stop. */
  private async process(job: Job, token: string | undefined): Promise<void> {
    try {
      await this.deliver(job, token);
    } catch (error) {
      if (error instanceof WaitingError || error instanceof UnrecoverableError) throw error;
      // Our own failure (Redis away, most likely), not the platform's: the delivery is not given up for it.
      this.logger.error({ err: error, job: job.id }, 'delivery failed in Redis; it is sent again');
      await sleep(HAND_BACK_PAUSE_MS, undefined, { signal: this.stopping.signal }).catch(() => undefined);
      await this.handBack(job, token);
    }
  }

  private async deliver(job: Job, token: string | undefined): Promise<void> {
    const parsed = parseDeliveryJob(job.data);
    if (!('job' in parsed)) return this.giveUp(job, undefined, `The delivery job is damaged and can never be sent: ${parsed.problem}`, {});
    let data = parsed.job;
    if (data.refused !== undefined) return this.giveUp(job, deliveryOf(data), data.refused, {});
    let resumed: ReturnType<typeof consumerContext>;
    try {
      resumed = consumerContext(data.context);
    } catch (error) {
      if (!(error instanceof ThreadlineError) || !UNUSABLE_ORIGIN.has(error.code)) throw error;
      // A damaged routing snapshot can never be resumed, so the delivery can never be sent.
      return this.giveUp(job, deliveryOf(data), error.message, { err: error });
    }
    for (;;) {
      // A retry's wait survives a hand-back: whoever runs the job next waits out what is left.
      if (data.dueAt !== undefined && data.dueAt > Date.now()) {
        const waited = await sleep(data.dueAt - Date.now(), true, { signal: this.stopping.signal }).catch(() => false);
        if (!waited) return this.handBack(job, token);
      }
      if (this.stopping.signal.aborted) return this.handBack(job, token);
      const delivery = deliveryOf(data);
      const span = tracer.startSpan(
        'gateway.deliver',
        { kind: SpanKind.CONSUMER, links: resumed.links, attributes: { ...deliveryAttributes(delivery, delivery.attempts + 1), 'messaging.destination.name': job.queueName } },
        resumed.context,
      );
      try {
        const error = await context.with(trace.setSpan(resumed.context, span), () => sendAttempt(this.platforms, delivery, span, this.shutdown.signal));
        if (error === undefined) {
          await this.options.records.finish(job, 'done');
          this.delivered++;
          this.options.parts.metrics.sent(this.platformLabel(delivery), delivery);
          return;
        }
        // Cut off by stop(), not refused: the job goes back to the front, no attempt counts.
        if (cutOffByStop(error, this.shutdown.signal)) return this.handBack(job, token);
        const next = afterFailure(delivery, error, this.options.parts.options);
        if (next.action === 'give up') {
          await job.updateData({ ...data, attempts: next.attempt });
          return this.giveUp(job, delivery, next.reason, { err: error, attempts: next.attempt });
        }
        data = { ...data, attempts: next.attempt, dueAt: next.dueAt, lastError: error.message };
        await job.updateData(data);
        this.retried++;
        this.options.parts.metrics.retry(this.platformLabel(delivery), delivery.kind);
      } finally {
        span.end();
      }
    }
  }

  /** Gives up: counted closed, logged, and failed with the reason, kept as a dead letter. */
  private async giveUp(job: Job, delivery: Delivery | undefined, reason: string, fields: Record<string, unknown>): Promise<never> {
    await this.options.records.finish(job, 'failed');
    this.failed++;
    if (delivery !== undefined) this.options.parts.metrics.delivery(this.platformLabel(delivery), delivery.kind, 'dead_letter');
    const where = delivery === undefined ? { job: job.id } : { delivery: delivery.id, destination: formatDestination(delivery.destination) };
    this.logger.error({ ...fields, ...where }, 'delivery failed for good; `threadline deliveries list --failed` shows it');
    throw new UnrecoverableError(reason);
  }

  /** Back to the front of its partition, unfinished: never completed nor failed. */
  private async handBack(job: Job, token: string | undefined): Promise<never> {
    await job.moveToWait(token);
    throw new HandedBack(`delivery ${job.id ?? ''} handed back`);
  }

  /** The platform as a metric attribute: only names of enabled platforms, so a stored oddity cannot add series. */
  private platformLabel(delivery: Pick<Delivery, 'destination'>): string {
    return this.platforms.has(delivery.destination.platform) ? delivery.destination.platform : 'unknown';
  }
}
