import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';

/** A batch as trace-file lines, each with its newline at most the cap, and the spans that fit in none. */
export interface TraceFileLines {
  /** OTLP/JSON ExportTraceServiceRequests, without their newline, in the batch's order. */
  readonly lines: Uint8Array[];
  readonly dropped: number;
}

/**
 * `spans` as one line when it fits in `maxBytes` (its newline included), else halved until each
 * part does: a file never has to hold more than its cap. A span that alone is larger cannot be
 * written whole and is dropped (counted): a cut line would not be JSON.
 */
export function traceFileLines(spans: readonly ReadableSpan[], maxBytes: number): TraceFileLines {
  const lines: Uint8Array[] = [];
  let dropped = 0;
  const add = (part: readonly ReadableSpan[]): void => {
    if (part.length === 0) return;
    const request = JsonTraceSerializer.serializeRequest([...part])!;
    if (request.length + 1 <= maxBytes) {
      lines.push(request);
    } else if (part.length === 1) {
      dropped++;
    } else {
      const half = Math.ceil(part.length / 2);
      add(part.slice(0, half));
      add(part.slice(half));
    }
  };
  add(spans);
  return { lines, dropped };
}
