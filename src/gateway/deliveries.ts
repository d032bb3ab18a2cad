import { setMaxListeners } from 'node:events';
import { SpanKind, SpanStatusCode, metrics, trace, type Attributes, type Span } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { DeliveryError, ThreadlineError } from '../errors.js';
import { networkFailure } from '../platforms/http-delivery.js';
import type { Platform } from '../platforms/platform.js';
import { getSession, recordFailure, runDetached, runResumed, type RoutingSnapshot, type Session } from '../session/index.js';
import type { DeliveryKind, Destination, Store, StoredDelivery } from '../store/store.js';
import { BackgroundWrites } from './background-writes.js';
import { backoffMs, type BackoffOptions } from './backoff.js';
import { settledBy } from './deadline.js';
import { formatDestination, type Target } from './delivery-target.js';
import { destinationOf, routingMismatch } from './misroute-guard.js';

export interface DeliveryRequest {
  /** Idempotency key; deterministic for replies, so a replayed turn does not send twice. */
  readonly id: string;
  readonly kind: DeliveryKind;
  readonly text: string;
  /** Default: origin. */
  readonly target?: Target;
  readonly inReplyTo?: string | undefined;
  /** The routing captured where the work began; the misroute guard compares against it. */
  readonly origin: RoutingSnapshot;
}

export interface DeliveryOptions {
  /** THREADLINE_STRICT_ROUTING: refuse a delivery whose destination differs from its origin. */
  readonly strictRouting: boolean;
  readonly maxAttempts: number;
  readonly backoff: BackoffOptions;
  /** Retries sent at once. */
  readonly maxInFlight: number;
  /** How long a delivery being sent is leased before it counts as lost (a crash). */
  readonly leaseMs: number;
}

export interface DeliveryStats {
  delivered: number;
  retried: number;
  failed: number;
  mismatches: number;
}

const ORIGIN: Target = { to: 'origin' };
const UNUSABLE_ORIGIN: ReadonlySet<string> = new Set(['TL_SNAPSHOT_INVALID', 'TL_SESSION_INVALID']);
/** setTimeout's longest delay; a longer one would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;
const tracer = trace.getTracer('threadline');
const mismatchCounter = metrics.getMeter('threadline').createCounter('threadline.routing.mismatches', {
  description: 'Deliveries whose destination differed from the routing captured at their origin',
});

/**
 * Resolves, guards, records and sends deliveries. A delivery is written to the outbox
 * before its first attempt and marked done only after the platform accepted it; failures
 * are retried with backoff by a loop that starts from the root context and resumes each
 * delivery's own origin routing. After a restart every pending delivery is sent again:
 * at least once, with a stable idempotency key.
 */
export class Deliveries {
  readonly stats: DeliveryStats = { delivered: 0, retried: 0, failed: 0, mismatches: 0 };
  private readonly sending = new Set<string>();
  /** Deliveries not yet sent or given up, per destination: a new one waits behind them. */
  private readonly backlog = new Map<string, number>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly shutdown = new AbortController();
  private readonly writes: BackgroundWrites;
  private timer: NodeJS.Timeout | undefined;
  private wakeAt = Number.POSITIVE_INFINITY;
  private stopped = false;
  private draining = false;
  /** A pass was asked for while one ran: run another after it. */
  private drainAgain = false;

  constructor(
    private readonly store: Store,
    private readonly platforms: ReadonlyMap<string, Platform>,
    private readonly options: DeliveryOptions,
    private readonly logger: Logger,
  ) {
    this.writes = new BackgroundWrites(logger);
    // Every send in flight listens on the one shutdown signal: many listeners are expected.
    setMaxListeners(0, this.shutdown.signal);
  }

  /**
   * Delivers now, inside a gateway.deliver span. Resolves once the delivery is sent (its
   * record as done follows in the background), or recorded for a retry, or recorded as
   * failed. Throws TL_TARGET_INVALID, TL_HOME_UNSET or TL_MISROUTE_REFUSED, when nothing
   * was recorded.
   */
  async deliver(request: DeliveryRequest): Promise<void> {
    const target = request.target ?? ORIGIN;
    const destination = await this.resolve(target, request.origin.session as Session);
    return tracer.startActiveSpan('gateway.deliver', { kind: SpanKind.CLIENT }, async (span) => {
      try {
        describeDelivery(span, request.id, request.kind, destination, 1);
        const mismatch = routingMismatch(request.origin.session as Session, destination);
        if (target.to === 'origin' && mismatch !== undefined) this.guard(span, mismatch, destination);
        // An anchor is a message of the origin chat: elsewhere it would quote a stranger's.
        const anchored = request.inReplyTo !== undefined && mismatch === undefined;
        const delivery: StoredDelivery = {
          id: request.id,
          kind: request.kind,
          destination,
          text: request.text,
          ...(anchored ? { inReplyTo: request.inReplyTo } : {}),
          origin: request.origin,
          attempts: 0,
          createdAt: Date.now(),
        };
        // Behind an older delivery of its chat (one waiting for its retry, say) it is only
        // recorded: the retry loop sends a chat's deliveries in order.
        const key = formatDestination(destination);
        const queued = this.backlog.has(key);
        this.backlog.set(key, (this.backlog.get(key) ?? 0) + 1);
        let added: boolean;
        try {
          added = await this.store.outbox.add(delivery, queued ? Date.now() : Date.now() + this.options.leaseMs);
        } catch (error) {
          this.settle(key);
          throw error;
        }
        if (!added) {
          this.settle(key);
          span.setAttribute('delivery.replayed', true);
          return;
        }
        if (queued) {
          span.setAttribute('delivery.queued', true);
          this.wake(Date.now());
          return;
        }
        await this.attempt(delivery, span);
      } catch (error) {
        recordFailure(span, error);
        throw error;
      } finally {
        span.end();
      }
    });
  }

  /**
   * Starts the retry loop. Deliveries a previous process was sending when it ended are sent
   * at once; those waiting for a retry keep their time.
   */
  async start(): Promise<void> {
    const now = Date.now();
    await this.store.outbox.releaseLeases(now);
    for (const { destination, count } of await this.store.outbox.pendingByDestination()) {
      this.backlog.set(formatDestination(destination), count);
    }
    this.wake(now);
  }

  /**
   * Stops retrying and lets sends under way finish until `deadline` (ms since the epoch); then
   * aborts every send still waiting, the turns' too: they stay pending in the outbox and are
   * sent again at the next start. Resolves once the records of sent deliveries have committed.
   */
  async stop(deadline: number): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await settledBy(Promise.allSettled([...this.inFlight]), deadline);
    this.shutdown.abort(new Error('the gateway is stopping'));
    await Promise.allSettled([...this.inFlight]);
    await this.writes.drained();
  }

  /** Resolves once the records of every send so far (done, for the most part) have committed. */
  recorded(): Promise<void> {
    return this.writes.drained();
  }

  async pendingCount(): Promise<number> {
    return this.store.outbox.pendingCount();
  }

  private async resolve(target: Target, origin: Session): Promise<Destination> {
    const destination =
      target.to === 'explicit'
        ? target.destination
        : target.to === 'home'
          ? await this.home(target.platform ?? (getSession() ?? origin).platform)
          : destinationOf(getSession() ?? origin);
    if (!this.platforms.has(destination.platform)) {
      throw new ThreadlineError('TL_TARGET_INVALID', `No platform "${destination.platform}" is enabled in this gateway`);
    }
    return destination;
  }

  private async home(platform: string): Promise<Destination> {
    const home = await this.store.homes.get(platform);
    if (home === undefined) {
      throw new ThreadlineError('TL_HOME_UNSET', `${platform} has no home channel; send /sethome in the chat that should be it`);
    }
    return home;
  }

  private guard(span: Span, mismatch: Attributes, destination: Destination): void {
    this.stats.mismatches++;
    mismatchCounter.add(1, { 'chat.platform': destination.platform });
    span.addEvent('routing.mismatch', mismatch);
    span.setStatus({ code: SpanStatusCode.ERROR, message: 'routing mismatch' });
    this.logger.warn({ routing: mismatch }, 'delivery destination differs from its origin routing');
    if (this.options.strictRouting) {
      throw new ThreadlineError(
        'TL_MISROUTE_REFUSED',
        'Refused a delivery whose destination differs from the routing of the work that produced it (THREADLINE_STRICT_ROUTING=1)',
      );
    }
  }

  private async attempt(delivery: StoredDelivery, span: Span): Promise<void> {
    const platform = this.platforms.get(delivery.destination.platform);
    const attempt = delivery.attempts + 1;
    this.sending.add(delivery.id);
    let handedOff = false;
    try {
      if (platform === undefined) {
        throw new DeliveryError(`No platform "${delivery.destination.platform}" is enabled`, { retryable: false });
      }
      await platform.send(
        {
          id: delivery.id,
          kind: delivery.kind,
          destination: delivery.destination,
          text: delivery.text,
          ...(delivery.inReplyTo === undefined ? {} : { inReplyTo: delivery.inReplyTo }),
          traceId: delivery.origin.origin?.traceId ?? span.spanContext().traceId,
        },
        this.shutdown.signal,
      );
      // Sent: the turn goes on without waiting for the record. The id stays in `sending` until
      // the record commits, so the retry loop cannot pick the row up meanwhile. If the record
      // is lost, the row is sent again when its lease ends: at least once, under the same key.
      const key = formatDestination(delivery.destination);
      this.settle(key);
      const recorded = this.store.outbox.markDone(delivery.id).finally(() => {
        this.sending.delete(delivery.id);
        // The next of its chat is due once this one no longer counts as pending.
        if (this.backlog.has(key)) this.wake(Date.now());
      });
      handedOff = true;
      this.writes.add(recorded, 'delivery sent but not recorded as done; it will be sent again when its lease ends', {
        delivery: delivery.id,
      });
      this.stats.delivered++;
    } catch (thrown) {
      const error = thrown instanceof DeliveryError ? thrown : networkFailure(thrown, delivery.destination.platform);
      recordFailure(span, error);
      if (error.retryable && this.shutdown.signal.aborted) {
        // Cut off by stop(), not refused by the platform: the row keeps its lease, which the
        // next start releases, and no attempt is counted.
      } else if (error.retryable && attempt < this.options.maxAttempts) {
        const dueAt = Date.now() + backoffMs(attempt, this.options.backoff, error.retryAfterMs);
        await this.store.outbox.retryAt(delivery.id, dueAt, error.message);
        this.stats.retried++;
        this.wake(dueAt);
      } else {
        await this.store.outbox.markFailed(delivery.id, error.message);
        this.stats.failed++;
        this.givenUp(delivery.destination);
        this.logger.error({ err: error, delivery: delivery.id, attempts: attempt }, 'delivery failed for good');
      }
    } finally {
      if (!handedOff) this.sending.delete(delivery.id);
    }
  }

  /** A retry runs in the delivery's own origin routing, in a new trace linked to the origin. */
  private async retry(delivery: StoredDelivery): Promise<void> {
    try {
      await this.store.outbox.lease(delivery.id, Date.now() + this.options.leaseMs);
      await runResumed(delivery.origin, 'gateway.deliver', async () => {
        const span = trace.getActiveSpan()!;
        describeDelivery(span, delivery.id, delivery.kind, delivery.destination, delivery.attempts + 1);
        await this.attempt(delivery, span);
      });
    } catch (error) {
      // drain() marked it as being sent; attempt() unmarks it, unless it failed before that.
      this.sending.delete(delivery.id);
      if (!(error instanceof ThreadlineError) || !UNUSABLE_ORIGIN.has(error.code)) throw error;
      // A damaged origin snapshot can never be resumed, so the row can never be sent.
      await this.store.outbox.markFailed(delivery.id, error.message);
      this.stats.failed++;
      this.givenUp(delivery.destination);
      this.logger.error({ err: error, delivery: delivery.id }, 'delivery has an unusable origin snapshot');
    }
  }

  /** One delivery of `key` is sent or given up: it no longer holds back the ones behind it. */
  private settle(key: string): void {
    const left = (this.backlog.get(key) ?? 1) - 1;
    if (left > 0) this.backlog.set(key, left);
    else this.backlog.delete(key);
  }

  private givenUp(destination: Destination): void {
    const key = formatDestination(destination);
    this.settle(key);
    if (this.backlog.has(key)) this.wake(Date.now());
  }

  /** Arms the retry timer for `at`, from the root context (lesson 12). */
  private wake(at: number): void {
    if (this.stopped || at >= this.wakeAt) return;
    clearTimeout(this.timer);
    this.wakeAt = at;
    const delay = Math.min(Math.max(0, at - Date.now()), MAX_TIMER_MS);
    this.timer = runDetached(() => setTimeout(() => void this.drain(), delay));
  }

  /** Sends what is due. A failing store must not end the loop: it logs and tries again later. */
  private async drain(): Promise<void> {
    this.wakeAt = Number.POSITIVE_INFINITY;
    if (this.stopped) return;
    // One pass at a time: two passes would both find a delivery due and send it twice.
    if (this.draining) {
      this.drainAgain = true;
      return;
    }
    this.draining = true;
    try {
      const free = this.options.maxInFlight - this.sending.size;
      if (free > 0) {
        const due = await this.store.outbox.due(Date.now(), free, this.sending);
        // stop() may have begun while the store answered: what is due waits for the next start.
        if (this.stopped) return;
        for (const delivery of due) {
          this.sending.add(delivery.id);
          this.track(this.retry(delivery));
        }
      }
      const next = await this.store.outbox.nextDueAt();
      if (next !== undefined) this.wake(Math.max(next, Date.now() + 50));
    } catch (error) {
      this.logger.error({ err: error }, 'delivery retry loop failed; trying again in a second');
      this.wake(Date.now() + 1000);
    } finally {
      this.draining = false;
      if (this.drainAgain) {
        this.drainAgain = false;
        this.wake(Date.now());
      }
    }
  }

  private track(work: Promise<void>): void {
    const tracked = work
      .catch((error: unknown) => {
        // The delivery stays pending under its lease and is picked up again after it.
        this.logger.error({ err: error }, 'delivery retry failed in the store');
      })
      .finally(() => this.inFlight.delete(tracked));
    this.inFlight.add(tracked);
  }
}

function describeDelivery(span: Span, id: string, kind: DeliveryKind, destination: Destination, attempt: number): void {
  span.setAttributes({
    'delivery.id': id,
    'delivery.kind': kind,
    'delivery.attempt': attempt,
    'routing.destination.platform': destination.platform,
    'routing.destination.chat.id': destination.chatId,
    ...(destination.threadId === undefined ? {} : { 'routing.destination.chat.thread.id': destination.threadId }),
  });
}
