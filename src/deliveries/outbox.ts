import { setMaxListeners } from 'node:events';
import { trace, type Span } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { ThreadlineError, type DeliveryError } from '../errors.js';
import type { Platform } from '../platforms/platform.js';
import { runDetached, runResumed } from '../session/index.js';
import type { NewDelivery, OutboxPressure, OutboxStore } from '../store/store.js';
import { BackgroundWrites } from '../background-writes.js';
import type { GatewayMetrics } from '../telemetry/gateway-metrics.js';
import { settledBy } from '../deadline.js';
import type { BackoffOptions } from './backoff.js';
import { formatDestination, type Delivery, type DeliveryRecord } from '../session/delivery.js';
import type { DeliveryQueue } from './delivery-queue.js';
import type { OutboxStats } from './outbox-stats.js';
import { afterFailure, cutOffByStop, deliveryAttributes, sendAttempt } from './send-attempt.js';

export interface OutboxOptions {
  readonly maxAttempts: number;
  /** A delivery is given up this long after its first attempt, however few attempts it had. */
  readonly giveUpAfterMs: number;
  readonly backoff: BackoffOptions;
  /** Deliveries the retry loop sends at once. */
  readonly maxInFlight: number;
  /** How long a delivery being sent is leased; past it, it counts as lost and is sent again. */
  readonly leaseMs: number;
}

export type { OutboxStats } from './outbox-stats.js';
export { deliveryAttributes } from './send-attempt.js';

/** The longest the loop sleeps: a delivery retried from the CLI, or a lease that ended, is seen this soon. */
const POLL_MS = 1_000;
/** setTimeout's longest delay; a longer one would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;
const UNUSABLE_ORIGIN: ReadonlySet<string> = new Set(['TL_SNAPSHOT_INVALID', 'TL_SESSION_INVALID']);

/**
 * Records deliveries, sends them through their platform, classifies the answer, backs off
 * and gives up. What is pending, being sent, due or in whose turn lives in the store alone:
 * a delivery with nothing of its chat ahead is claimed as it is recorded and sent at once, in
 * the turn that made it; the others, and retries, are claimed by a loop that runs from the
 * root context and resumes each delivery's own origin routing in a new trace.
 */
export class Outbox implements DeliveryQueue {
  private delivered = 0;
  private retried = 0;
  private failed = 0;
  /** The loop's sends under way: counted against maxInFlight, awaited at stop. */
  private readonly loopSends = new Set<Promise<void>>();
  private readonly shutdown = new AbortController();
  private readonly writes: BackgroundWrites;
  private timer: NodeJS.Timeout | undefined;
  private wakeAt = Number.POSITIVE_INFINITY;
  private stopped = false;
  private claiming = false;
  /** The last pass claimed as many as it had room for: a send that ends makes room for more. */
  private saturated = false;
  /** A pass was asked for while one ran: run another after it. */
  private claimAgain = false;

  constructor(
    private readonly store: OutboxStore,
    private readonly platforms: ReadonlyMap<string, Platform>,
    private readonly options: OutboxOptions,
    private readonly logger: Logger,
    private readonly metrics: GatewayMetrics,
  ) {
    this.writes = new BackgroundWrites(logger);
    // Every send in flight listens on the one shutdown signal: many listeners are expected.
    setMaxListeners(0, this.shutdown.signal);
  }

  /**
   * Records a delivery inside the caller's gateway.deliver span and, when nothing of its
   * destination is ahead of it, sends it now. Resolves once it is sent (its record as done
   * follows in the background), or recorded for a retry or for its turn, or given up.
   */
  async send(delivery: NewDelivery, span: Span): Promise<void> {
    const leaseUntil = delivery.createdAt + this.options.leaseMs;
    const added = await this.store.add(delivery, leaseUntil);
    if (added === 'exists') span.setAttribute('delivery.replayed', true);
    else if (added === 'queued') span.setAttribute('delivery.queued', true);
    else await this.attempt({ ...delivery, attempts: 0, attemptsSince: delivery.createdAt }, leaseUntil, span);
  }

  async refuse(delivery: NewDelivery, reason: string, span: Span): Promise<void> {
    if (!(await this.store.addRefused(delivery, reason))) span.setAttribute('delivery.replayed', true);
    this.failed++;
    this.metrics.delivery(this.platformLabel(delivery), delivery.kind, 'dead_letter');
  }

  /** Starts the loop. Deliveries an earlier process was sending are due at once; retries keep their time. */
  async start(): Promise<void> {
    const now = Date.now();
    await this.store.releaseLeases(now);
    this.wake(now);
  }

  /**
   * Stops claiming and lets sends under way finish until `deadline` (ms since the epoch); then
   * aborts every send still waiting, the turns' too: they stay claimed in the store and are
   * sent again at the next start. Resolves once the records of sent deliveries have committed.
   */
  async stop(deadline: number): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await settledBy(Promise.allSettled([...this.loopSends]), deadline);
    this.shutdown.abort(new Error('the gateway is stopping'));
    await Promise.allSettled([...this.loopSends]);
    await this.writes.drained();
  }

  /** Resolves once the records of every send so far (done, for the most part) have committed. */
  recorded(): Promise<void> {
    return this.writes.drained();
  }

  stats(): OutboxStats {
    return { delivered: this.delivered, retried: this.retried, failed: this.failed };
  }

  pressure(maxOpenPerDestination: number): Promise<OutboxPressure> {
    return this.store.pressure(maxOpenPerDestination);
  }

  /** The newest deliveries in the store, for inspection (the CLI reads the store directly). */
  list(filter: Parameters<OutboxStore['list']>[0]): Promise<DeliveryRecord[]> {
    return this.store.list(filter);
  }

  /** One attempt of a delivery claimed until `leaseUntil`; its outcome is recorded under that claim. */
  private async attempt(delivery: Delivery, leaseUntil: number, span: Span): Promise<void> {
    const error = await sendAttempt(this.platforms, delivery, span, this.shutdown.signal);
    if (error !== undefined) {
      // Cut off by stop(), not refused: the claim stays, the next start sends it, no attempt counts.
      if (!cutOffByStop(error, this.shutdown.signal)) await this.afterFailure(delivery, leaseUntil, error);
      return;
    }
    this.delivered++;
    this.metrics.sent(this.platformLabel(delivery), delivery);
    // Sent: the turn goes on without waiting for the record. If it is lost, the store still
    // holds the delivery as being sent and the loop claims it again when its lease ends.
    this.writes.add(
      this.store.markDone(delivery.id, leaseUntil).then((next) => next && this.wake(Date.now())),
      'delivery sent but not recorded as done; it will be sent again when its lease ends',
      { delivery: delivery.id },
    );
  }

  /** Backs off, or gives up: refused for good, out of attempts, or past the give-up time. */
  private async afterFailure(delivery: Delivery, leaseUntil: number, error: DeliveryError): Promise<void> {
    const next = afterFailure(delivery, error, this.options);
    if (next.action === 'retry') {
      await this.store.retryAt(delivery.id, next.dueAt, error.message, leaseUntil);
      this.retried++;
      this.metrics.retry(this.platformLabel(delivery), delivery.kind);
      this.wake(next.dueAt);
      return;
    }
    await this.giveUp(delivery, leaseUntil, next.reason, { err: error, attempts: next.attempt });
  }

  private async giveUp(delivery: Delivery, leaseUntil: number, reason: string, fields: Record<string, unknown>): Promise<void> {
    const next = await this.store.markFailed(delivery.id, reason, leaseUntil);
    this.failed++;
    this.metrics.delivery(this.platformLabel(delivery), delivery.kind, 'dead_letter');
    if (next) this.wake(Date.now());
    this.logger.error({ ...fields, delivery: delivery.id, destination: formatDestination(delivery.destination) }, 'delivery failed for good; `threadline deliveries list --failed` shows it');
  }

  /** The platform as a metric attribute: only names of enabled platforms, so a stored oddity cannot add series. */
  private platformLabel(delivery: Pick<Delivery, 'destination'>): string {
    return this.platforms.has(delivery.destination.platform) ? delivery.destination.platform : 'unknown';
  }

  /** A loop send runs in the delivery's own origin routing, in a new trace linked to the origin. */
  private async resume(delivery: Delivery, leaseUntil: number): Promise<void> {
    try {
      await runResumed(delivery.origin, 'gateway.deliver', async () => {
        const span = trace.getActiveSpan()!;
        span.setAttributes(deliveryAttributes(delivery, delivery.attempts + 1));
        await this.attempt(delivery, leaseUntil, span);
      });
    } catch (error) {
      if (!(error instanceof ThreadlineError) || !UNUSABLE_ORIGIN.has(error.code)) throw error;
      // A damaged origin snapshot can never be resumed, so the delivery can never be sent.
      await this.giveUp(delivery, leaseUntil, error.message, { err: error });
    }
  }

  /** Arms the timer for `at`, from the root context: a loop must not carry a message's context. */
  private wake(at: number): void {
    if (this.stopped || at >= this.wakeAt) return;
    clearTimeout(this.timer);
    this.wakeAt = at;
    const delay = Math.min(Math.max(0, at - Date.now()), MAX_TIMER_MS);
    this.timer = runDetached(() => setTimeout(() => void this.claim(), delay));
  }

  /** One claim pass. A failing store must not end the loop: it logs and tries again later. */
  private async claim(): Promise<void> {
    this.wakeAt = Number.POSITIVE_INFINITY;
    if (this.stopped) return;
    if (this.claiming) {
      this.claimAgain = true;
      return;
    }
    this.claiming = true;
    let next = Date.now() + POLL_MS;
    try {
      const free = this.options.maxInFlight - this.loopSends.size;
      const now = Date.now();
      const leaseUntil = now + this.options.leaseMs;
      const { deliveries, nextAt } = await this.store.claim(now, Math.max(free, 0), leaseUntil);
      // stop() may have begun while the store answered: what was claimed is sent at the next start.
      if (this.stopped) return;
      for (const delivery of deliveries) this.track(this.resume(delivery, leaseUntil));
      this.saturated = deliveries.length === free;
      if (nextAt !== undefined && !this.saturated) next = Math.min(next, nextAt);
    } catch (error) {
      this.logger.error({ err: error }, 'delivery loop failed in the store; trying again in a second');
    } finally {
      this.claiming = false;
      // A saturated loop waits for a send to end (track wakes it); otherwise for the next head.
      if (this.claimAgain) {
        this.claimAgain = false;
        next = Date.now();
      }
      this.wake(next);
    }
  }

  private track(work: Promise<void>): void {
    const tracked = work
      .catch((error: unknown) => {
        // The delivery stays claimed under its lease and is sent again after it.
        this.logger.error({ err: error }, 'delivery failed in the store');
      })
      .finally(() => {
        this.loopSends.delete(tracked);
        if (this.saturated) this.wake(Date.now());
      });
    this.loopSends.add(tracked);
  }
}
