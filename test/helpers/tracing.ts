import { trace, type Tracer } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, afterEach, beforeAll } from 'vitest';

export interface TestTracing {
  readonly provider: BasicTracerProvider;
  readonly exporter: InMemorySpanExporter;
  readonly tracer: Tracer;
  /** Spans ended so far (exported synchronously by a SimpleSpanProcessor). */
  spans(): ReadableSpan[];
  /** The one ended span called `name`; fails when there is not exactly one. */
  span(name: string): ReadableSpan;
}

/** A real SDK tracer provider: `processors` first, then an in-memory exporter. Not registered globally. */
export function createTestTracing(processors: readonly SpanProcessor[] = []): TestTracing {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [...processors, new SimpleSpanProcessor(exporter)] });
  return {
    provider,
    exporter,
    tracer: provider.getTracer('threadline-test'),
    spans: () => exporter.getFinishedSpans(),
    span: (name) => {
      const found = exporter.getFinishedSpans().filter((span) => span.name === name);
      if (found.length !== 1) throw new Error(`expected one span named ${name}, found ${found.length}`);
      return found[0]!;
    },
  };
}

/**
 * Registers a test provider as the global one for the calling test file (code under test
 * that uses trace.getTracer gets it), clears its spans after each test and unregisters it
 * with trace.disable() after the file.
 */
export function useGlobalTracing(processors: readonly SpanProcessor[] = []): TestTracing {
  const tracing = createTestTracing(processors);
  beforeAll(() => {
    if (!trace.setGlobalTracerProvider(tracing.provider)) throw new Error('a global tracer provider was already registered');
  });
  afterEach(() => tracing.exporter.reset());
  afterAll(async () => {
    trace.disable();
    await tracing.provider.shutdown();
  });
  return tracing;
}
