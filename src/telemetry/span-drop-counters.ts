import { ValueType, type Counter, type Meter } from '@opentelemetry/api';
import { threadlineMeter } from './threadline-meter.js';

/** Refused requests that got no gateway.reject span. One definition, for the limit that counts and the gateway that starts it at 0. */
export function rejectSpansDropped(meter: Meter = threadlineMeter()): Counter {
  return meter.createCounter('threadline.reject_spans.dropped', {
    valueType: ValueType.INT,
    unit: '{span}',
    description: 'Refused requests that got no gateway.reject span (THREADLINE_REJECT_SPANS_PER_SECOND)',
  });
}

/** Spans too large for the trace file. One definition, as rejectSpansDropped. */
export function traceFileSpansDropped(meter: Meter = threadlineMeter()): Counter {
  return meter.createCounter('threadline.trace_file.spans_dropped', {
    valueType: ValueType.INT,
    unit: '{span}',
    description: 'Spans not written to the trace file because each alone is larger than THREADLINE_TRACE_FILE_MAX_BYTES',
  });
}
