import type { MeterProvider } from '@opentelemetry/api';
import { RuntimeNodeInstrumentation } from '@opentelemetry/instrumentation-runtime-node';

/**
 * Records the process's event loop delay and utilization, heap by space and GC pauses
 * (OpenTelemetry's runtime-node instrumentation, semantic-convention names) on `provider`
 * until the returned function is called. Given the provider outright, not through
 * NodeSDK's instrumentations, which are built before any meter provider and keep no-op meters.
 */
export function startRuntimeMetrics(provider: MeterProvider): () => void {
  // Built with its collectors enabled but no instruments: setMeterProvider makes them, once.
  const runtime = new RuntimeNodeInstrumentation();
  runtime.setMeterProvider(provider);
  return () => runtime.disable();
}
