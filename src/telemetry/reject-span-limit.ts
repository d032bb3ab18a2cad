import type { Counter } from '@opentelemetry/api';
import { rejectSpansDropped } from './span-drop-counters.js';

/**
 * How many gateway.reject spans are recorded: a token bucket of `perSecond` a second (as
 * many in a burst), so one client's stream of 401s cannot fill the trace store or the trace
 * file. Refusals beyond it are counted, not recorded.
 */
export class RejectSpanLimit {
  /** Refusals that got no span, since start. */
  dropped = 0;
  private tokens: number;
  private last: number;
  /** Made at the first drop: a meter got before the SDK registers would be a no-op for good. */
  private counter: Counter | undefined;

  constructor(
    readonly perSecond: number,
    private readonly now: () => number = Date.now,
  ) {
    this.tokens = perSecond;
    this.last = now();
  }

  /** Whether this refusal may have a span; false counts it as dropped. */
  take(): boolean {
    const now = this.now();
    this.tokens = Math.min(this.perSecond, this.tokens + ((now - this.last) * this.perSecond) / 1000);
    this.last = now;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return true;
    }
    this.dropped++;
    this.counter ??= rejectSpansDropped();
    this.counter.add(1);
    return false;
  }
}

let limit = new RejectSpanLimit(10);

/** The process's limit: 10 a second until startTelemetry applies THREADLINE_REJECT_SPANS_PER_SECOND. */
export function rejectSpanLimit(): RejectSpanLimit {
  return limit;
}

/** Replaces the process's limit (a fresh count of drops); `now` is for tests. */
export function limitRejectSpans(perSecond: number, now?: () => number): RejectSpanLimit {
  limit = new RejectSpanLimit(perSecond, now);
  return limit;
}
