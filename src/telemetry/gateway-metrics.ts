import { ValueType, type BatchObservableCallback, type Counter, type Histogram, type Meter, type ObservableGauge } from '@opentelemetry/api';
import type { Delivery, DeliveryKind } from '../session/delivery.js';
import type { ErrorCode } from '../errors.js';
import { deliveryAcceptedAt } from './delivery-accepted-at.js';
import { HTTP_SERVER_DURATION_BUCKETS, httpServerAttributes } from './http-server-duration.js';
import { rejectSpansDropped, traceFileSpansDropped } from './span-drop-counters.js';
import { threadlineMeter } from './threadline-meter.js';

/** How a turn ended: returned, threw, or had its signal aborted (/stop or shutdown). */
export type TurnResult = 'ok' | 'error' | 'aborted';
/** How a delivery ended: the platform took it, or it was given up and kept as a dead letter. */
export type DeliveryResult = 'sent' | 'dead_letter';

/** What the gauges read each time a reader collects. */
export interface GaugeSources {
  /** Messages waiting for their turn or running. */
  queued(): number;
  outbox(): Promise<{ readonly pending: number; readonly fullChats: number; readonly oldestPendingSince: number | undefined }>;
}

// Attribute keys: semantic conventions where one fits; every value comes from a short fixed set, never an id.
const PLATFORM = 'messaging.system';
const REASON = 'error.type';
const TURN_RESULT = 'threadline.turn.result';
const DELIVERY_KIND = 'threadline.delivery.kind';
const DELIVERY_RESULT = 'threadline.delivery.result';

/** Agent turns take from milliseconds (an echo) to minutes (a model with tools). */
const TURN_SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
/** A reply's latency holds its turn; a retried delivery's, the platform's downtime, up to the give-up time. */
const DELIVERY_LATENCY_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 21600];

/** Every kind, so each platform's counters of each kind start at 0. */
const DELIVERY_KINDS = Object.keys({ reply: true, notification: true, cron: true, send: true } satisfies Record<DeliveryKind, true>) as DeliveryKind[];
/** The refusals an operator alerts on, started at 0 for each platform; others appear when first counted. */
const REFUSALS_FROM_ZERO: readonly ErrorCode[] = ['TL_BAD_REQUEST', 'TL_UNAUTHORIZED', 'TL_INTAKE_FULL', 'TL_CHAT_BACKLOG_FULL'];

/** Refusals already counted: intake counts first (it knows the platform); the HTTP answer that follows does not count again. */
const countedRefusals = new WeakSet<object>();

/**
 * threadline's instruments. Build one when the gateway is built, after startMetrics has
 * registered the meter provider: the API has no proxy meter, so instruments made earlier
 * would record nothing. Instruments of the same name share their counts across instances.
 */
export class GatewayMetrics {
  private readonly messagesAccepted: Counter;
  private readonly messagesRefused: Counter;
  private readonly turnDuration: Histogram;
  private readonly httpServerDuration: Histogram;
  private readonly deliveries: Counter;
  private readonly deliveryLatency: Histogram;
  private readonly deliveryRetries: Counter;
  private readonly routingMismatches: Counter;
  private readonly redisUnsuitable: Counter;
  private readonly intakeQueued: ObservableGauge;
  private readonly outboxPending: ObservableGauge;
  private readonly outboxFullChats: ObservableGauge;
  private readonly outboxOldestAge: ObservableGauge;

  constructor(private readonly meter: Meter = threadlineMeter()) {
    const integer = { valueType: ValueType.INT };
    this.messagesAccepted = meter.createCounter('threadline.messages.accepted', {
      ...integer,
      unit: '{message}',
      description: 'Inbound messages accepted (stored and queued for their turn), by platform',
    });
    this.messagesRefused = meter.createCounter('threadline.messages.refused', {
      ...integer,
      unit: '{message}',
      description: 'Inbound requests refused, by platform (where known) and error code',
    });
    this.turnDuration = meter.createHistogram('threadline.turn.duration', {
      unit: 's',
      description: 'Agent turns, by platform and result, and how long they took',
      advice: { explicitBucketBoundaries: TURN_SECONDS_BUCKETS },
    });
    // The semantic conventions' instrument, so dashboards made for any HTTP server read it.
    this.httpServerDuration = meter.createHistogram('http.server.request.duration', {
      unit: 's',
      description: 'Duration of HTTP server requests',
      advice: { explicitBucketBoundaries: HTTP_SERVER_DURATION_BUCKETS },
    });
    this.deliveryLatency = meter.createHistogram('threadline.delivery.latency', {
      unit: 's',
      description: "Deliveries sent, by platform and kind, and how long after the gateway accepted their work: a reply's message, or the delivery itself for the other kinds",
      advice: { explicitBucketBoundaries: DELIVERY_LATENCY_BUCKETS },
    });
    this.deliveries = meter.createCounter('threadline.deliveries', {
      ...integer,
      unit: '{delivery}',
      description: 'Deliveries finished, by platform, kind and result (sent, or dead_letter when given up)',
    });
    this.deliveryRetries = meter.createCounter('threadline.delivery.retries', {
      ...integer,
      unit: '{attempt}',
      description: 'Delivery attempts that failed and were scheduled again, by platform and kind',
    });
    this.routingMismatches = meter.createCounter('threadline.routing.mismatches', {
      ...integer,
      unit: '{delivery}',
      description: 'Deliveries whose destination differed from the routing captured at their origin, by platform',
    });
    this.redisUnsuitable = meter.createCounter('threadline.redis.unsuitable', {
      ...integer,
      unit: '{event}',
      description: 'Times a running instance found its Redis unable to hold accepted work safely (an evicting maxmemory-policy, say): intake refuses until it is fixed',
    });
    this.intakeQueued = meter.createObservableGauge('threadline.intake.queued', {
      ...integer,
      unit: '{message}',
      description: 'Messages waiting for their turn or running',
    });
    this.outboxPending = meter.createObservableGauge('threadline.outbox.pending', {
      ...integer,
      unit: '{delivery}',
      description: 'Deliveries not yet sent (pending or being sent)',
    });
    this.outboxFullChats = meter.createObservableGauge('threadline.outbox.full_chats', {
      ...integer,
      unit: '{chat}',
      description: 'Chats whose deliveries not yet sent are at THREADLINE_OUTBOX_MAX_PER_CHAT (their intake answers 429)',
    });
    this.outboxOldestAge = meter.createObservableGauge('threadline.outbox.oldest_pending.age', {
      unit: 's',
      description: "Age of the oldest delivery not yet sent, from its first attempt (or its retry from the CLI); 0 when none",
    });
  }

  /**
   * Exports every counter at 0 now, with the attributes it will have for `platforms`, so a
   * scrape right after start lists them and the first event is an increase, not a new series.
   */
  startAtZero(platforms: Iterable<string>): void {
    for (const platform of platforms) {
      const on = { [PLATFORM]: platform };
      this.messagesAccepted.add(0, on);
      for (const code of REFUSALS_FROM_ZERO) this.messagesRefused.add(0, { ...on, [REASON]: code });
      this.routingMismatches.add(0, on);
      for (const kind of DELIVERY_KINDS) {
        const of = { ...on, [DELIVERY_KIND]: kind };
        this.deliveryRetries.add(0, of);
        for (const result of ['sent', 'dead_letter'] satisfies DeliveryResult[]) this.deliveries.add(0, { ...of, [DELIVERY_RESULT]: result });
      }
    }
    this.redisUnsuitable.add(0);
    rejectSpansDropped(this.meter).add(0);
    traceFileSpansDropped(this.meter).add(0);
  }

  accepted(platform: string): void {
    this.messagesAccepted.add(1, { [PLATFORM]: platform });
  }

  /** Counts a refusal once, however many layers see `error` on its way out. */
  refused(code: ErrorCode, platform: string | undefined, error?: unknown): void {
    if (typeof error === 'object' && error !== null) {
      if (countedRefusals.has(error)) return;
      countedRefusals.add(error);
    }
    this.messagesRefused.add(1, platform === undefined ? { [REASON]: code } : { [PLATFORM]: platform, [REASON]: code });
  }

  turn(platform: string, result: TurnResult, seconds: number): void {
    this.turnDuration.record(seconds, { [PLATFORM]: platform, [TURN_RESULT]: result });
  }

  /** One HTTP request answered, `seconds` after it arrived; `route` is undefined when no route matched. */
  httpRequest(method: string, status: number, route: string | undefined, scheme: string, seconds: number): void {
    this.httpServerDuration.record(seconds, httpServerAttributes(method, status, route, scheme));
  }

  /** A delivery the platform took: counted as sent, and its latency from its work's acceptance recorded. */
  sent(platform: string, delivery: Pick<Delivery, 'id' | 'kind' | 'createdAt'>): void {
    const attributes = { [PLATFORM]: platform, [DELIVERY_KIND]: delivery.kind };
    this.deliveries.add(1, { ...attributes, [DELIVERY_RESULT]: 'sent' });
    this.deliveryLatency.record(Math.max(0, Date.now() - deliveryAcceptedAt(delivery)) / 1000, attributes);
  }

  delivery(platform: string, kind: DeliveryKind, result: DeliveryResult): void {
    this.deliveries.add(1, { [PLATFORM]: platform, [DELIVERY_KIND]: kind, [DELIVERY_RESULT]: result });
  }

  retry(platform: string, kind: DeliveryKind): void {
    this.deliveryRetries.add(1, { [PLATFORM]: platform, [DELIVERY_KIND]: kind });
  }

  mismatch(platform: string): void {
    this.routingMismatches.add(1, { [PLATFORM]: platform });
  }

  /** Redis turned unsuitable while the gateway ran: counted once per turn, not per check. */
  unsuitableRedis(): void {
    this.redisUnsuitable.add(1);
  }

  /** Reads the gauges from `sources` at each collection until the returned function is called. */
  observe(sources: GaugeSources): () => void {
    const gauges = [this.intakeQueued, this.outboxPending, this.outboxFullChats, this.outboxOldestAge];
    const callback: BatchObservableCallback = async (result) => {
      result.observe(this.intakeQueued, sources.queued());
      // A store that cannot answer (closing, failing) leaves the outbox gauges out of this collection.
      const outbox = await sources.outbox().catch(() => undefined);
      if (outbox === undefined) return;
      result.observe(this.outboxPending, outbox.pending);
      result.observe(this.outboxFullChats, outbox.fullChats);
      const since = outbox.oldestPendingSince;
      result.observe(this.outboxOldestAge, since === undefined ? 0 : Math.max(0, (Date.now() - since) / 1000));
    };
    this.meter.addBatchObservableCallback(callback, gauges);
    return () => this.meter.removeBatchObservableCallback(callback, gauges);
  }
}
