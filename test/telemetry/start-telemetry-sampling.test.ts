import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT_CONTEXT, diag, propagation, trace } from '@opentelemetry/api';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { spansFromOtlpJson } from '../../src/forensics/otlp-json.js';
import { createPropagator, readTelemetryConfig } from '../../src/telemetry/index.js';
import { startTelemetry } from '../../src/telemetry/start-telemetry.js';

const dir = mkdtempSync(join(tmpdir(), 'threadline-start-sampling-'));

afterAll(() => {
  vi.unstubAllEnvs();
  diag.disable();
  propagation.disable();
  propagation.setGlobalPropagator(createPropagator());
  rmSync(dir, { recursive: true, force: true });
});

describe('startTelemetry under a sampler that drops every trace', () => {
  it('exports the forensic copy of a flagged delivery and nothing else of its trace', async () => {
    const file = join(dir, 'traces.jsonl');
    // The SDK, and so the sampler, reads OTEL_TRACES_SAMPLER from the process environment.
    vi.stubEnv('OTEL_TRACES_SAMPLER', 'always_off');
    const telemetry = startTelemetry(readTelemetryConfig({ OTEL_TRACES_EXPORTER: 'file', THREADLINE_TRACE_FILE: file, THREADLINE_LOG_LEVEL: 'silent', OTEL_METRICS_EXPORTER: 'none' }));
    const tracer = trace.getTracer('threadline');
    const turn = tracer.startSpan('gateway.message', {}, ROOT_CONTEXT);
    const deliver = tracer.startSpan('gateway.deliver', { attributes: { 'delivery.id': 'm1/leak', 'delivery.target': 'origin' } }, trace.setSpan(ROOT_CONTEXT, turn));
    deliver.addEvent('routing.mismatch');
    deliver.end();
    turn.end();
    await telemetry.shutdown();
    const spans = readFileSync(file, 'utf8').split('\n').filter((line) => line !== '').flatMap((line) => spansFromOtlpJson(JSON.parse(line), file));
    expect(spans.map((span) => [span.name, span.attributes['threadline.forensic.span_name'], span.attributes['threadline.forensic.trace_id']])).toEqual([
      ['threadline.forensic', 'gateway.deliver', deliver.spanContext().traceId],
    ]);
  });
});
