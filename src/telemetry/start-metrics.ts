import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { diag, metrics } from '@opentelemetry/api';
import { OTLPMetricExporter as OtlpGrpcMetricExporter } from '@opentelemetry/exporter-metrics-otlp-grpc';
import { OTLPMetricExporter as OtlpJsonMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter as OtlpProtobufMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { ConsoleMetricExporter, MeterProvider, PeriodicExportingMetricReader, type MetricReader, type PushMetricExporter } from '@opentelemetry/sdk-metrics';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import { ThreadlineError } from '../errors.js';
import type { MetricsConfig, OtlpProtocol } from './telemetry-config.js';
import { serviceAttributes } from './service-attributes.js';
import { withPrometheusNames } from './prometheus-names.js';
import { startRuntimeMetrics } from './runtime-metrics.js';

export interface Metrics {
  /**
   * Resolves once metrics are served: for `prometheus` with the scrape URL, once it listens
   * (TL_LISTEN_FAILED when it cannot, its port taken say); at once, with undefined, otherwise.
   */
  readonly ready: Promise<string | undefined>;
  /** Exports what is left and stops; call once, on the way out. */
  shutdown(): Promise<void>;
}

/** Where Prometheus scrapes, as OTel's exporter serves it. */
const PROMETHEUS_PATH = '/metrics';
/** The Prometheus text format the serializer writes (no OpenMetrics `# EOF`). */
const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
/** The PeriodicExportingMetricReader's own default; an export never runs past the next one. */
const EXPORT_TIMEOUT_MS = 30_000;

/**
 * Registers the global meter provider with the exporter the configuration names, so
 * threadline's instruments record; with `none`, nothing is registered and they stay no-ops.
 * Call it before the gateway is built: the API has no proxy meter provider.
 */
export function startMetrics(config: MetricsConfig, resource: { serviceName: string; serviceVersion: string; serviceInstanceId?: string | undefined }): Metrics {
  if (config.exporter === 'none') return { ready: Promise.resolve(undefined), shutdown: () => Promise.resolve() };
  const prometheus = config.exporter === 'prometheus' ? new PrometheusEndpoint(config.prometheusHost, config.prometheusPort) : undefined;
  const provider = new MeterProvider({
    // Merged as NodeSDK merges the traces' resource: OTEL_RESOURCE_ATTRIBUTES overrides the
    // version, OTEL_SERVICE_NAME the name, so spans and metrics name the same service.
    resource: defaultResource()
      .merge(resourceFromAttributes(serviceAttributes(resource)))
      .merge(detectResources({ detectors: [envDetector] }))
      .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: resource.serviceName })),
    readers: [prometheus?.reader ?? periodicReader(config)],
  });
  if (!metrics.setGlobalMeterProvider(provider)) {
    void provider.shutdown();
    throw new ThreadlineError('TL_INTERNAL', 'A meter provider is registered already: startMetrics runs once a process, until its shutdown()');
  }
  const stopRuntime = startRuntimeMetrics(provider);
  const ready = prometheus?.listen() ?? Promise.resolve(undefined);
  // The caller awaits it at start-up; unawaited, a failure must not end the process as an unhandled rejection.
  ready.catch(() => {});
  return {
    ready,
    shutdown: async () => {
      try {
        // The last export still reads the runtime; its monitors stop after it.
        await provider.shutdown();
      } finally {
        // Even when the last export failed: the scrape port is freed, and the global too, so
        // a later startMetrics (a restart in tests) can register.
        stopRuntime();
        metrics.disable();
        await prometheus?.close();
      }
    },
  };
}

/** Where metrics go, for the start banner: `scrapeUrl` is what `ready` resolved to. */
export function describeMetrics(config: MetricsConfig, scrapeUrl: string | undefined): string {
  switch (config.exporter) {
    case 'none':
      return 'off';
    case 'prometheus':
      return `prometheus ${scrapeUrl ?? 'not listening'}`;
    case 'otlp':
      return `otlp ${config.otlpProtocol}`;
    case 'console':
      return 'console';
  }
}

/** otlp and console push on OTEL_METRIC_EXPORT_INTERVAL. */
function periodicReader(config: MetricsConfig): MetricReader {
  const exporter = config.exporter === 'console' ? new ConsoleMetricExporter() : otlpExporter(config.otlpProtocol);
  return new PeriodicExportingMetricReader({
    exporter,
    exportIntervalMillis: config.exportIntervalMs,
    exportTimeoutMillis: Math.min(EXPORT_TIMEOUT_MS, config.exportIntervalMs),
  });
}

/** The OTLP metric exporter of the protocol; each reads OTEL_EXPORTER_OTLP_(METRICS_)ENDPOINT, headers and temporality itself. */
function otlpExporter(protocol: OtlpProtocol): PushMetricExporter {
  switch (protocol) {
    case 'http/protobuf':
      return new OtlpProtobufMetricExporter();
    case 'http/json':
      return new OtlpJsonMetricExporter();
    case 'grpc':
      return new OtlpGrpcMetricExporter();
  }
}

/**
 * OTel's Prometheus exporter behind a server of threadline's: the exporter's own cannot take
 * port 0 (it reads 0 as "unset") and reports a taken port only to the diag log; and its
 * names lack their unit suffixes (withPrometheusNames adds them).
 */
class PrometheusEndpoint {
  readonly reader = new PrometheusExporter({ preventServerStart: true });
  private readonly serializer = new PrometheusSerializer();
  private readonly server = createServer((request, response) => this.handle(request, response));

  constructor(
    private readonly host: string,
    private readonly port: number,
  ) {
    // As the exporter's own: a scrape endpoint alone must not hold the process open.
    this.server.unref();
  }

  listen(): Promise<string> {
    return new Promise((resolve, reject) => {
      this.server.once('error', (error: NodeJS.ErrnoException) =>
        reject(
          new ThreadlineError(
            'TL_LISTEN_FAILED',
            `Cannot serve Prometheus metrics on ${this.host}:${this.port} (${error.code ?? error.message}): stop what holds the port, or set OTEL_EXPORTER_PROMETHEUS_PORT or OTEL_EXPORTER_PROMETHEUS_HOST`,
            { cause: error },
          ),
        ),
      );
      this.server.listen({ port: this.port, host: this.host }, () => {
        const { address, port } = this.server.address() as AddressInfo;
        resolve(`http://${address.includes(':') ? `[${address}]` : address}:${port}${PROMETHEUS_PATH}`);
      });
    });
  }

  close(): Promise<void> {
    if (!this.server.listening) return Promise.resolve();
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      // A scraper's kept-alive connection would hold close() open.
      this.server.closeAllConnections();
    });
  }

  private handle(request: IncomingMessage, response: ServerResponse): void {
    if (request.method === 'GET' && request.url?.split('?')[0] === PROMETHEUS_PATH) {
      void this.scrape(response);
      return;
    }
    response.statusCode = 404;
    response.end();
  }

  /** As the exporter's own handler, with Prometheus names: a collection's errors go to the diag log, what was collected is served. */
  private async scrape(response: ServerResponse): Promise<void> {
    try {
      const { resourceMetrics, errors } = await this.reader.collect();
      if (errors.length > 0) diag.error('Prometheus scrape: metrics collection errors', ...errors);
      response.writeHead(200, { 'content-type': PROMETHEUS_CONTENT_TYPE });
      response.end(this.serializer.serialize(withPrometheusNames(resourceMetrics)));
    } catch (error) {
      diag.error('Prometheus scrape failed', error);
      response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
      response.end('# metrics collection failed\n');
    }
  }
}
