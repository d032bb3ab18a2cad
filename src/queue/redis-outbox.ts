import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { SpanKind, context, trace, type Span } from '@opentelemetry/api';
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
import type { NewDelivery, OutboxPressure, OutboxRecords } from '../store/store.js';
import { threadlineTracer } from '../telemetry/tracer.js';
import { deliveryJobId, deliveryOf, parseDeliveryJob, type DeliveryJobData } from './delivery-job.js';
import { consumerContext } from './job-context.js';
import { migrateLegacyDeliveryPartitions } from './legacy-delivery-partitions.js';
import type { LeaseTimings } from './lease-worker-options.js';
import { MailboxDrains } from './mailbox-drains.js';
import type { MailboxHead, MailboxMessage, Ownership } from './mailboxes.js';
import type { RedisOutboxRecords } from './redis-outbox-records.js';
import { deliveryAcceptedAt } from '../telemetry/delivery-accepted-at.js';
import { DeliveryMinutes } from '../deliveries/delivery-minutes.js';

/** A failure of our own (Redis away) gives the destination up after this, so a lasting one cannot spin. */
const HAND_BACK_PAUSE_MS = 1_000;
/** A retry due sooner than this is waited for in the slot; a later one frees the slot (the drain job is delayed). */
const WAIT_IN_SLOT_MS = 1_000;
/** Deliveries a drain job sends before it yields its slot to other destinations (its successor waits at the back). */
const SENDS_PER_DRAIN = 16;
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

/** Thrown once the destination was given up (stopping, a long wait): its drain ends there. */
class Released extends Error {}

/** The destination is another's now: nothing more is done under this ownership, not even a release. */
class Fenced extends Error {}

/** What became of the head of a mailbox: sent or given up (`finished`), or `unusable` (kept aside). */
type HeadOutcome = 'finished' | 'unusable';

/**
 * The distributed outbox. The destination (platform, chat, thread) is the unit of order: its
 * deliveries wait in its mailbox (RedisOutboxRecords) with at most one owner, cluster-wide,
 * which sends them in order. The instance that records a delivery with a slot free (the
 * outbox's maxInFlight, from THREADLINE_CONCURRENCY) owns a destination nobody owns and sends
 * at once; otherwise a drain job lets any instance with a free slot claim it, so sends at once
 * reach the sum of the instances' slots and a slow platform call holds only its own
 * destination. Each step is fenced by the owner's token. Retries happen in place, backing off
 * as the embedded outbox does; a long wait (Retry-After) gives the destination up with a
 * delayed drain job and frees its slot. A given-up delivery is kept as a dead letter for
 * `threadline deliveries`.
 */
export class RedisOutbox implements DeliveryQueue {
  private delivered = 0;
  readonly minutes = new DeliveryMinutes();
  private retried = 0;
  private failed = 0;
  private readonly connections: Redis[] = [];
  /** Aborted when stop() begins: waits between attempts end and hand their job back. */
  private readonly stopping = new AbortController();
  /** Aborted at stop()'s deadline: sends under way are cut off and handed back. */
  private readonly shutdown = new AbortController();
  private readonly platforms: ReadonlyMap<string, Platform>;
  private readonly logger: Logger;
  private readonly drains: MailboxDrains;

  constructor(private readonly options: RedisOutboxOptions) {
    this.platforms = options.parts.platforms;
    this.logger = options.parts.logger;
    const { records } = options;
    this.drains = new MailboxDrains({
      mailboxes: records.mailboxes,
      queue: records.queue.name,
      prefix: records.queuePrefix,
      slots: options.parts.options.maxInFlight,
      wake: (key) => records.wake(key),
      logger: this.logger,
      what: 'delivery',
      mailboxesAre: 'destinations',
      lockDurationMs: options.lockDurationMs,
      stalledIntervalMs: options.stalledIntervalMs,
      sweepEveryMs: options.sweepEveryMs,
    });
    // Every job in flight listens on these signals: many listeners are expected.
    setMaxListeners(0, this.stopping.signal);
    setMaxListeners(0, this.shutdown.signal);
  }

  /**
   * Records the delivery in its destination's mailbox inside the router's gateway.deliver span.
   * With a slot free here and nobody sending to the destination, this instance sends it at once;
   * otherwise the destination's owner sends it in turn, or a drain job (of any instance).
   */
  async send(delivery: NewDelivery, span: Span): Promise<void> {
    span.setAttribute('messaging.destination.name', this.options.records.queue.name);
    const claim = this.drains.claim();
    let added;
    try {
      added = await this.options.records.addOwned(delivery, claim === undefined ? {} : { claim });
    } finally {
      if (added?.claimed === undefined) this.drains.unclaimed(claim);
    }
    span.setAttribute(added.outcome === 'exists' ? 'delivery.replayed' : 'delivery.queued', true);
    // A head other than this delivery may be one an owner that died finished before it could pop it.
    if (added.claimed !== undefined) this.drains.drainHere(added.key, claim!, added.claimed, added.claimed.id !== deliveryJobId(delivery.id));
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
    await this.drains.start(connection, (key, owner, head, maybeFinished) => this.drain(key, owner, head, maybeFinished));
  }

  /**
   * Stops taking jobs; sends under way get until `deadline`, then are cut off. A delivery not
   * finished stays at the head of its mailbox, its attempts kept; the destination is given up
   * with a drain job, so whichever instance takes it sends it next.
   */
  async stop(deadline: number): Promise<void> {
    this.stopping.abort(new Error('the gateway is stopping'));
    this.drains.stop();
    // Until none is left: a job taken just as the stop began may start one more.
    const closed = this.drains.settled();
    if (!(await settledBy(closed, deadline))) this.shutdown.abort(new Error('the gateway is stopping'));
    await closed;
    await this.drains.close();
    await Promise.allSettled(this.connections.map((connection) => connection.quit()));
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

  /**
   * Sends the deliveries waiting in destination `key`'s mailbox, owned here, oldest first, each
   * step fenced by the ownership. `maybeFinished`: the first head may have been finished by an owner
   * that died before it popped it. MailboxDrains lets the slot and the ownership go at the end.
   */
  private async drain(key: string, owner: Ownership, first: MailboxMessage, maybeFinished: boolean): Promise<void> {
    const { records } = this.options;
    // Lost (cut off past the lease): the send under way is cut off; the next step finds the fence.
    const lost = new AbortController();
    this.drains.owners.hold(key, owner.token, () => {
      this.logger.warn({ destination: key }, 'a destination drained here lost its lease; another instance drains it, this one stops');
      lost.abort(new Error('the destination lost its lease: another instance sends to it'));
    });
    const signal = AbortSignal.any([this.shutdown.signal, lost.signal]);
    let head: MailboxHead = { fenced: false, message: first };
    try {
      for (let sends = 0; ; sends++) {
        if (this.stopping.signal.aborted) return await this.release(key, owner);
        if (head.fenced) throw new Fenced();
        // Empty: the pop gave the destination up; a delivery added from now on finds no owner.
        if (head.message === undefined) return;
        if (sends === SENDS_PER_DRAIN) return await this.release(key, owner);
        const done = sends === 0 && maybeFinished && (await records.finished(head.message.id));
        const outcome: HeadOutcome = done ? 'finished' : await this.deliver(key, owner, head.message, signal);
        head = await records.mailboxes.pop(key, owner, head.message.id, outcome === 'unusable');
      }
    } catch (error) {
      if (error instanceof Released) return;
      if (error instanceof Fenced) {
        this.logger.warn({ queue: records.queue.name, destination: key }, 'a drain job lost its lock; another instance drains its destination');
        return;
      }
      // Our own failure (Redis away, most likely), not the platform's: the delivery is not given up for it.
      this.logger.error({ err: error, destination: key }, 'delivery failed in Redis; it is sent again');
      await sleep(HAND_BACK_PAUSE_MS, undefined, { signal: this.stopping.signal }).catch(() => undefined);
      // Should this fail too, the lease lapses and a sweep gives the destination a drain job.
      await this.release(key, owner).catch(() => undefined);
    }
  }

  /** Every attempt of the head of the mailbox until sent or given up; hands the job back at stop, delays it for a long wait. */
  private async deliver(key: string, owner: Ownership, message: MailboxMessage, signal: AbortSignal): Promise<HeadOutcome> {
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
      if (wait > WAIT_IN_SLOT_MS) return this.delay(key, owner, data.dueAt!);
      if (wait > 0) {
        const waited = await sleep(wait, true, { signal: this.stopping.signal }).catch(() => false);
        if (!waited) return this.handBack(key, owner);
      }
      if (this.stopping.signal.aborted) return this.handBack(key, owner);
      const delivery = deliveryOf(data);
      const span = tracer.startSpan(
        'gateway.deliver',
        { kind: SpanKind.CONSUMER, links: resumed.links, attributes: { ...deliveryAttributes(delivery, delivery.attempts + 1), 'messaging.destination.name': this.options.records.queue.name } },
        resumed.context,
      );
      try {
        const error = await context.with(trace.setSpan(resumed.context, span), () => sendAttempt(this.platforms, delivery, span, signal));
        if (error === undefined) {
          await this.options.records.finish(message.id, 'done', JSON.stringify(data));
          this.delivered++;
          this.minutes.record(Date.now(), deliveryAcceptedAt(delivery));
          this.options.parts.metrics.sent(this.platformLabel(delivery), delivery);
          return 'finished';
        }
        // Cut off by stop(), not refused: the job goes back to the front, no attempt counts.
        if (cutOffByStop(error, this.shutdown.signal)) return this.handBack(key, owner);
        const next = afterFailure(delivery, error, this.options.parts.options);
        if (next.action === 'give up') return this.giveUp(message.id, { ...data, attempts: next.attempt }, next.reason, { err: error, attempts: next.attempt });
        data = { ...data, attempts: next.attempt, dueAt: next.dueAt, lastError: error.message };
        if (!(await this.options.records.mailboxes.rewrite(key, owner.token, message.id, JSON.stringify(data)))) throw new Fenced();
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

  /** Gives up owning `key`'s mailbox, with a drain job for what is left in it: another instance, or this one later, goes on. */
  private release(key: string, owner: Ownership): Promise<void> {
    return this.drains.release(key, owner);
  }

  /** Gives the destination up unfinished (stopping): the delivery stays at the head of its mailbox, its attempts kept, sent next by whoever drains it. */
  private async handBack(key: string, owner: Ownership): Promise<never> {
    await this.release(key, owner);
    throw new Released();
  }

  /** Frees the slot until `dueAt`: the destination is given up with a drain job due then (an add meanwhile is folded into it). */
  private async delay(key: string, owner: Ownership, dueAt: number): Promise<never> {
    const { records } = this.options;
    await records.mailboxes.release(key, owner.token);
    await records.wake(key, Math.max(1, dueAt - Date.now()));
    throw new Released();
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
