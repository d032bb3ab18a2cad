import { context } from '@opentelemetry/api';
import { isTracingSuppressed } from '@opentelemetry/core';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { BatchSpanProcessor, type BufferConfig } from '@opentelemetry/sdk-trace-base';
import { createSpanExporter } from './create-span-exporter.js';
import { createPropagator, installContext } from './install-context.js';
import { RedactSpanProcessor } from './redact-span-processor.js';
import { limitRejectSpans } from './reject-span-limit.js';
import { SessionSpanProcessor } from './session-span-processor.js';
import { ThreadlineContextManager } from './threadline-context-manager.js';
import { readTelemetryConfig, type TelemetryConfig } from './telemetry-config.js';

export interface Telemetry {
  readonly config: TelemetryConfig;
  /** Flushes pending spans and stops exporting; call once, on the way out. */
  shutdown(): Promise<void>;
}

/**
 * Boots OpenTelemetry for threadline: the AsyncLocalStorage context manager, W3C trace
 * context and baggage propagators with threadline's policies, http and undici
 * instrumentations, the SessionSpanProcessor and the RedactSpanProcessor ahead of a batch
 * exporter. With tracing off only the context manager and propagators are registered,
 * because routing needs them.
 */
export function startTelemetry(config: TelemetryConfig = readTelemetryConfig()): Telemetry {
  const propagator = createPropagator(config);
  const exporter = createSpanExporter(config);
  // Built before anything is registered, so a bad privacy setting fails before start-up.
  const stamper = new SessionSpanProcessor(config.attributes);
  limitRejectSpans(config.rejectSpansPerSecond);
  if (exporter === undefined) {
    installContext(propagator);
    return { config, shutdown: () => Promise.resolve() };
  }
  const contextManager = new ThreadlineContextManager();
  const sdk = new NodeSDK({
    serviceName: config.serviceName,
    contextManager,
    textMapPropagator: propagator,
    instrumentations: [
      // Inbound requests get no http span: a platform message's trace starts at
      // gateway.message, built with inbound distrust, not at a span parented by whatever the
      // caller sent; a refused one gets gateway.reject; health probes would only be noise.
      // Off, the server is not wrapped at all, which saves about a tenth of a message's cost.
      new HttpInstrumentation({
        disableIncomingRequestInstrumentation: true,
        // Where tracing is suppressed (span exports, deliveries that gateway.deliver already
        // traces) both instrumentations would still parse URLs and build attributes for a
        // span nobody records; skip it whole.
        ignoreOutgoingRequestHook: () => isTracingSuppressed(context.active()),
      }),
      new UndiciInstrumentation({ ignoreRequestHook: () => isTracingSuppressed(context.active()) }),
    ],
    spanProcessors: [stamper, new RedactSpanProcessor(config.attributes), new BatchSpanProcessor(exporter, batchDefaults())],
    // Traces only. Left unset, NodeSDK adds OTLP metric and log exporters aimed at
    // localhost:4318 even when spans go to the file: they retry on every flush and hold
    // shutdown for seconds where no collector listens.
    metricReaders: [],
    logRecordProcessors: [],
  });
  sdk.start();
  contextManager.adoptIfRegistered();
  return { config, shutdown: () => sdk.shutdown() };
}

/**
 * Larger batches than the SDK's (512 spans, queue of 2,048): a gateway ends three or more
 * spans per message, and fewer, larger exports cost less per span (bench:gateway) and drop
 * nothing in a burst. The standard OTEL_BSP_* variables still win where they are set.
 */
function batchDefaults(env: NodeJS.ProcessEnv = process.env): BufferConfig {
  return {
    ...(env['OTEL_BSP_MAX_EXPORT_BATCH_SIZE'] ? {} : { maxExportBatchSize: 2048 }),
    ...(env['OTEL_BSP_MAX_QUEUE_SIZE'] ? {} : { maxQueueSize: 16_384 }),
  };
}
