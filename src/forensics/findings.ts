import type { DeliveryKind } from '../session/delivery.js';

/** Where a delivery went, or the work it came from was for: ids as the source holds them. */
export interface RoutingView {
  readonly platform: string;
  /** Absent when the spans carry no ids (`off` privacy). */
  readonly chatId?: string;
  readonly threadId?: string;
}

/** A span named in a finding: enough to find it in a trace viewer. */
export interface SpanRef {
  readonly traceId: string;
  readonly spanId: string;
  readonly name: string;
  /** ms since the epoch. */
  readonly at: number;
  /** The routing the span was stamped with, when it carries one. */
  readonly routing?: RoutingView;
}

/** The span of a trace the head sampler dropped that a forensic copy stands for (its trace id is what the logs carry). */
export interface SampledOut {
  readonly traceId: string;
  readonly spanId: string;
}

/** What produced a delivery, from the root span of the work. */
export type WorkKind = 'turn' | 'watcher' | 'cron run' | 'outbox retry' | 'other';

export interface WorkRef extends SpanRef {
  readonly kind: WorkKind;
}

/** A delivery that went, or was about to go, somewhere other than the conversation its work was for. */
export interface Misroute {
  readonly type: 'misroute';
  readonly deliveryId: string;
  readonly deliveryKind: string;
  readonly origin: RoutingView;
  readonly destination: RoutingView;
  /** `sent`: it reached the wrong chat; `refused`: strict routing stopped it; `failed`, `queued`: as the span says. */
  readonly outcome: 'sent' | 'refused' | 'failed' | 'queued';
  /** The gateway.deliver span. */
  readonly delivery: SpanRef;
  /** The first span, from the work's root down to the delivery, stamped with a routing other than the origin. */
  readonly divergedAt: SpanRef;
  /** The root of the work that produced the delivery (the origin's trace when it differs). */
  readonly work?: WorkRef;
  /** `guard`: the gateway's routing.mismatch event; `trace`: the destination differs from its trace's root. */
  readonly detectedBy: 'guard' | 'trace';
  /** Read from a forensic copy: the delivery's own trace was not sampled. */
  readonly sampledOut?: SampledOut;
}

/** Work that was due and not delivered: from the traces, or from the gateway's store. */
export interface LostWork {
  readonly type: 'lost';
  readonly what: 'delivery' | 'cron run' | 'watcher notification';
  /** The delivery id (what the traces and the outbox call it: `cron:<schedule>:<due>`, `proc:<process>:done`, …). */
  readonly id: string;
  /** The schedule or process behind it, when the store names one. */
  readonly workId?: string;
  readonly kind?: DeliveryKind;
  /** What became of it: `failed` (given up), `pending`, `sending`, `overdue` (a cron run not run), `not recorded`. */
  readonly state: string;
  /** When it was due (ms since the epoch). */
  readonly dueAt: number;
  readonly destination?: RoutingView;
  readonly origin?: RoutingView;
  /** The trace of the work that produced it, when known. */
  readonly originTraceId?: string;
  readonly lastError?: string;
  readonly attempts?: number;
  readonly source: 'traces' | 'store';
  /** Read from a forensic copy: the trace of its failure was not sampled. */
  readonly sampledOut?: SampledOut;
}

export type Finding = Misroute | LostWork;

/** What lost work of a delivery kind is called: `cron run`, `watcher notification`, else `delivery`. */
export function lostWhat(kind: string | undefined): LostWork['what'] {
  return kind === 'cron' ? 'cron run' : kind === 'notification' ? 'watcher notification' : 'delivery';
}
