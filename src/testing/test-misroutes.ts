import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { findMisroutes } from '../forensics/find-misroutes.js';
import type { Misroute } from '../forensics/findings.js';
import { spansFromOtlpJson } from '../forensics/otlp-json.js';
import { groupByTrace } from '../forensics/trace-model.js';

/**
 * The misroutes `threadline misroutes` would find in these spans: they go through the same
 * OTLP/JSON encoding as the trace file, and the same analysis.
 */
export function misroutesIn(spans: ReadableSpan[]): Promise<Misroute[]> {
  if (spans.length === 0) return Promise.resolve([]);
  const encoded = JsonTraceSerializer.serializeRequest(spans)!;
  const traces = groupByTrace(spansFromOtlpJson(JSON.parse(Buffer.from(encoded).toString('utf8')), 'the test spans'));
  const byId = new Map(traces.map((trace) => [trace.traceId, trace]));
  return findMisroutes(traces, { get: async (traceId) => byId.get(traceId) });
}
