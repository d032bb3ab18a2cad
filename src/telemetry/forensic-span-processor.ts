import { TraceFlags, type Context } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { forensicReason } from './forensic-reason.js';
import { forensicCopy } from './forensic-span.js';

/**
 * Stands before the exporting processor: sampled spans pass as they are; a span recorded but
 * not sampled (see threadlineSampler) that shows a misroute or a failed delivery passes as a
 * forensic copy in a sampled trace of its own, linked to it. Everything else of an unsampled
 * trace stays unexported, as the sampler decided. Last in the chain, after the
 * RedactSpanProcessor's onEnding, so the copy carries only what was already safe to export.
 */
export class ForensicSpanProcessor implements SpanProcessor {
  constructor(private readonly exporting: SpanProcessor) {}

  onStart(span: Span, parentContext: Context): void {
    this.exporting.onStart(span, parentContext);
  }

  onEnd(span: ReadableSpan): void {
    if ((span.spanContext().traceFlags & TraceFlags.SAMPLED) !== 0) return this.exporting.onEnd(span);
    const reason = forensicReason(span);
    if (reason !== undefined) this.exporting.onEnd(forensicCopy(span, reason));
  }

  forceFlush(): Promise<void> {
    return this.exporting.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.exporting.shutdown();
  }
}
