import { trace } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { installContext } from '../telemetry/install-context.js';
import { RedactSpanProcessor } from '../telemetry/redact-span-processor.js';
import { SessionSpanProcessor } from '../telemetry/session-span-processor.js';

/** Finished spans of the process, kept in memory, stamped and redacted as in production. */
export interface TestTelemetry {
  readonly exporter: InMemorySpanExporter;
  spans(traceId?: string): ReadableSpan[];
  /** Waits until extra processors (an OTLP exporter, say) have exported. */
  flush(): Promise<void>;
}

let installed: TestTelemetry | undefined;

/**
 * Registers, once per process, the context manager, threadline's propagators and a tracer
 * provider whose spans are stamped and kept in memory. Once, because tracers obtained
 * before a re-registration would keep pointing at the old provider; later calls return
 * the same instance and ignore `extraProcessors`.
 */
export function installTestTelemetry(extraProcessors: readonly SpanProcessor[] = []): TestTelemetry {
  if (installed !== undefined) return installed;
  installContext();
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    spanProcessors: [new SessionSpanProcessor(), new RedactSpanProcessor(), new SimpleSpanProcessor(exporter), ...extraProcessors],
  });
  trace.setGlobalTracerProvider(provider);
  installed = {
    exporter,
    spans: (traceId) => {
      const spans = exporter.getFinishedSpans();
      return traceId === undefined ? spans : spans.filter((span) => span.spanContext().traceId === traceId);
    },
    flush: () => provider.forceFlush(),
  };
  return installed;
}
