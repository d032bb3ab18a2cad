/**
 * A tracer provider built as startTelemetry builds it under 1% head sampling (the batch
 * processor aside: a simple one writes at once), with trace ids the ratio drops, spans written
 * to a trace file, and every span that ended kept in memory, sampled or not: what the gateway
 * did, beside what it exported. Registered once per test file, before any gateway starts.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT_CONTEXT, TraceFlags, trace } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  RandomIdGenerator,
  SamplingDecision,
  SimpleSpanProcessor,
  TraceIdRatioBasedSampler,
  type IdGenerator,
  type ReadableSpan,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { expect } from 'vitest';
import { runThreadline } from '../../src/cli/threadline.js';
import type { LostWork, Misroute } from '../../src/forensics/findings.js';
import { spansFromOtlpJson } from '../../src/forensics/otlp-json.js';
import { FileSpanExporter } from '../../src/telemetry/file-span-exporter.js';
import { ForensicSpanProcessor } from '../../src/telemetry/forensic-span-processor.js';
import { RedactSpanProcessor } from '../../src/telemetry/redact-span-processor.js';
import { SessionSpanProcessor } from '../../src/telemetry/session-span-processor.js';
import { threadlineSampler } from '../../src/telemetry/threadline-sampler.js';

export const SAMPLING = { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01' };
const ratio = new TraceIdRatioBasedSampler(0.01);

export function sampledByRatio(traceId: string): boolean {
  return ratio.shouldSample(ROOT_CONTEXT, traceId).decision === SamplingDecision.RECORD_AND_SAMPLED;
}

/** Random trace ids, but only those the 1% ratio drops: every trace the gateway starts is not sampled. */
class DroppedTraceIds implements IdGenerator {
  private readonly random = new RandomIdGenerator();
  generateTraceId(): string {
    for (;;) {
      const id = this.random.generateTraceId();
      if (!sampledByRatio(id)) return id;
    }
  }
  generateSpanId(): string {
    return this.random.generateSpanId();
  }
}

class EndedSpans implements SpanProcessor {
  readonly spans: ReadableSpan[] = [];
  onStart(): void {}
  onEnd(span: ReadableSpan): void {
    this.spans.push(span);
  }
  forceFlush(): Promise<void> {
    return Promise.resolve();
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

export interface Report {
  readonly misroutes: Misroute[];
  readonly lost: LostWork[];
}

export interface SampledTelemetry {
  readonly file: string;
  /** Every span that ended, sampled or not. */
  readonly ended: readonly ReadableSpan[];
  endedIn(traceId: string, name: string): ReadableSpan[];
  /** The traces of the spans written to the trace file (not of their links). */
  exportedTraceIds(): Set<string>;
  /** Waits until every exported span is in the trace file. */
  flush(): Promise<void>;
  /** `threadline misroutes --json` on the trace file, lost work judged at once. */
  misroutes(): Promise<{ code: number; report: Report }>;
  close(): Promise<void>;
}

export function isSampled(span: ReadableSpan): boolean {
  return (span.spanContext().traceFlags & TraceFlags.SAMPLED) !== 0;
}

export function installSampledTelemetry(): SampledTelemetry {
  const dir = mkdtempSync(join(tmpdir(), 'threadline-sampled-'));
  const file = join(dir, 'traces.jsonl');
  const ended = new EndedSpans();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'threadline' }),
    sampler: threadlineSampler(SAMPLING),
    idGenerator: new DroppedTraceIds(),
    spanProcessors: [new SessionSpanProcessor(), new RedactSpanProcessor(), ended, new ForensicSpanProcessor(new SimpleSpanProcessor(new FileSpanExporter(file)))],
  });
  expect(trace.setGlobalTracerProvider(provider)).toBe(true);
  return {
    file,
    ended: ended.spans,
    endedIn: (traceId, name) => ended.spans.filter((span) => span.spanContext().traceId === traceId && span.name === name),
    exportedTraceIds: () => {
      const lines = readFileSync(file, 'utf8').split('\n').filter((line) => line !== '');
      return new Set(lines.flatMap((line) => spansFromOtlpJson(JSON.parse(line), file).map((span) => span.traceId)));
    },
    flush: () => provider.forceFlush(),
    misroutes: async () => {
      await provider.forceFlush();
      let out = '';
      let err = '';
      const code = await runThreadline(['misroutes', '--file', file, '--json', '--lost-after', '1ms', '--no-store'], {
        out: (text) => void (out += text),
        err: (text) => void (err += text),
        env: {},
      });
      expect(err).toBe('');
      return { code, report: JSON.parse(out) as Report };
    },
    close: async () => {
      await provider.shutdown();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
