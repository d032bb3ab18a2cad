import { context } from '@opentelemetry/api';
import { isTracingSuppressed } from '@opentelemetry/core';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { serviceAttributes } from './service-attributes.js';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { BatchSpanProcessor, type BufferConfig } from '@opentelemetry/sdk-trace-base';
import type { Logger } from 'pino';
import { createPropagator } from './create-propagator.js';
import { createSpanExporter } from './create-span-exporter.js';
import { installDiagLogger } from './diag-logger.js';
import { installContext } from './install-context.js';
import { createLogger } from './logger.js';
import { RedactSpanProcessor } from './redact-span-processor.js';
import { limitRejectSpans } from './reject-span-limit.js';
import { SessionSpanProcessor } from './session-span-processor.js';
import { ForensicSpanProcessor } from './forensic-span-processor.js';
import { threadlineSampler } from './threadline-sampler.js';
import { startLogs } from './start-logs.js';
import { startMetrics, type Metrics } from './start-metrics.js';
import { ThreadlineContextManager } from './threadline-context-manager.js';
import { readTelemetryConfig, type TelemetryConfig } from './telemetry-config.js';
import { readInteger } from '../config/read-setting.js';

export interface Telemetry {
  readonly config: TelemetryConfig;
  /** The process's logger, as THREADLINE_LOG_LEVEL and the privacy settings make it; OpenTelemetry's own warnings go to it too. */
  readonly logger: Logger;
  /** Resolves once metrics are served (with the Prometheus scrape URL, if that is the exporter); rejects when they cannot be. */
  readonly metricsReady: Metrics['ready'];
  /** Flushes pending spans, metrics and logs and stops exporting; call once, on the way out. */
  shutdown(): Promise<void>;
}

/**
 * Boots OpenTelemetry for threadline: the AsyncLocalStorage context manager, the
 * OTEL_PROPAGATORS propagators with threadline's session baggage, http and undici
 * instrumentations, the SessionSpanProcessor and the RedactSpanProcessor ahead of a batch
 * exporter, the metrics OTEL_METRICS_EXPORTER names, and the process's logger as
 * OpenTelemetry's diag logger. With tracing off only the context manager and propagators are
 * registered, because routing needs them, and metrics and the logger.
 */
export function startTelemetry(config: TelemetryConfig = readTelemetryConfig()): Telemetry {
  const propagator = createPropagator(config);
  const exporter = createSpanExporter(config);
  const stamper = new SessionSpanProcessor(config.attributes);
  limitRejectSpans(config.rejectSpansPerSecond);
  const service = { serviceName: config.serviceName, serviceVersion: config.serviceVersion, serviceInstanceId: config.serviceInstanceId };
  // OTEL_LOGS_EXPORTER=otlp: every record goes to stdout and, as an OpenTelemetry log, to the collector.
  const logs = startLogs(config.logs, service);
  const logger = createLogger({
    level: config.logLevel,
    includeNames: config.logNames,
    privacy: config.attributes,
    ...(logs.destination === undefined ? {} : { destination: logs.destination }),
  });
  for (const warning of config.logs.warnings) logger.warn(warning);
  if (exporter === undefined) {
    installDiagLogger(logger);
    installContext(propagator);
    const metrics = startMetrics(config.metrics, service);
    return { config, logger, metricsReady: metrics.ready, shutdown: () => settleAll(metrics.shutdown(), logs.shutdown()) };
  }
  const contextManager = new ThreadlineContextManager();
  const sdk = new NodeSDK({
    serviceName: config.serviceName,
    // Given a resource, the SDK leaves out its default one (telemetry.sdk.*): merged back here.
    // OTEL_RESOURCE_ATTRIBUTES, detected at start, still overrides service.version.
    resource: defaultResource().merge(resourceFromAttributes(serviceAttributes(service))),
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
    // Misroutes and failed deliveries are exported whatever the head sampler decided for their trace.
    sampler: threadlineSampler(),
    spanProcessors: [stamper, new RedactSpanProcessor(config.attributes), new ForensicSpanProcessor(new BatchSpanProcessor(exporter, batchDefaults()))],
    // Traces only: metrics have their own provider (startMetrics). Left unset, NodeSDK adds
    // OTLP metric and log exporters aimed at localhost:4318 even when spans go to the file:
    // they retry on every flush and hold shutdown for seconds where no collector listens.
    metricReaders: [],
    logRecordProcessors: [],
  });
  // After NodeSDK's constructor, which may set a console diag logger of its own; before any
  // export, so a collector that refuses or cannot be reached shows in the log.
  installDiagLogger(logger);
  sdk.start();
  contextManager.adoptIfRegistered();
  // After the SDK, so the instrumentations built above keep no-op meters: threadline records
  // its own metrics, and a histogram on every HTTP call would cost each message.
  const metrics = startMetrics(config.metrics, service);
  return {
    config,
    logger,
    metricsReady: metrics.ready,
    shutdown: () => settleAll(sdk.shutdown(), metrics.shutdown(), logs.shutdown()),
  };
}

/**
 * Larger batches than the SDK's (512 spans, queue of 2,048): a gateway ends three or more
 * spans per message, and fewer, larger exports cost less per span (bench:gateway) and drop
 * nothing in a burst. The standard OTEL_BSP_* variables still win where they are set.
 */
function batchDefaults(env: NodeJS.ProcessEnv = process.env): BufferConfig {
  return {
    maxExportBatchSize: readInteger(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE'),
    maxQueueSize: readInteger(env, 'OTEL_BSP_MAX_QUEUE_SIZE'),
  };
}

/** Waits for all, so a failed trace flush does not cut the metrics' or logs' short; then fails with the first error. */
async function settleAll(...flushes: Promise<void>[]): Promise<void> {
  for (const result of await Promise.allSettled(flushes)) {
    if (result.status === 'rejected') throw result.reason;
  }
}

