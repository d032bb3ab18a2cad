import { OTLPLogExporter as OtlpGrpcLogExporter } from '@opentelemetry/exporter-logs-otlp-grpc';
import { OTLPLogExporter as OtlpJsonLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPLogExporter as OtlpProtobufLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider, type LogRecordExporter } from '@opentelemetry/sdk-logs';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import { pino, type DestinationStream } from 'pino';
import type { LogsConfig } from './logs-config.js';
import { otlpLogStream } from './otlp-log-stream.js';
import { serviceAttributes } from './service-attributes.js';
import type { OtlpProtocol } from './telemetry-config.js';
import { VERSION } from '../version.js';

export interface Logs {
  /** Where the process's logger writes: stdout, and the collector too with `otlp`; undefined for pino's default (stdout). */
  readonly destination: DestinationStream | undefined;
  /** Exports what is queued now, and waits for it. */
  forceFlush(): Promise<void>;
  /** Exports what is queued and stops; call once, on the way out. */
  shutdown(): Promise<void>;
}

/**
 * With OTEL_LOGS_EXPORTER=otlp, a LoggerProvider with a BatchLogRecordProcessor and the OTLP
 * log exporter of the protocol (each reads OTEL_EXPORTER_OTLP_(LOGS_)ENDPOINT, headers and TLS
 * itself), and a destination that writes each line to stdout and emits it as a LogRecord.
 * With `none`, nothing: stdout JSON only. The resource is the spans' and metrics' one.
 */
export function startLogs(
  config: LogsConfig,
  service: { serviceName: string; serviceVersion: string; serviceInstanceId?: string | undefined },
  // As pino's own default destination: stdout, asynchronous, flushed on exit.
  stdout: DestinationStream = pino.destination({ dest: process.stdout.fd || 1 }),
): Logs {
  if (config.exporter === 'none') return { destination: undefined, forceFlush: () => Promise.resolve(), shutdown: () => Promise.resolve() };
  const provider = new LoggerProvider({
    resource: defaultResource()
      .merge(resourceFromAttributes(serviceAttributes(service)))
      .merge(detectResources({ detectors: [envDetector] }))
      .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: service.serviceName })),
    logRecordLimits: config.limits,
    processors: [new BatchLogRecordProcessor({ exporter: otlpLogExporter(config.otlpProtocol), ...config.batch })],
  });
  // Each stream at the lowest level: the logger's own level decides what is written at all.
  const destination = pino.multistream([
    { level: 'trace', stream: stdout },
    { level: 'trace', stream: otlpLogStream(provider.getLogger('threadline', VERSION)) },
  ]);
  return { destination, forceFlush: () => provider.forceFlush(), shutdown: () => provider.shutdown() };
}

function otlpLogExporter(protocol: OtlpProtocol): LogRecordExporter {
  switch (protocol) {
    case 'http/protobuf':
      return new OtlpProtobufLogExporter();
    case 'http/json':
      return new OtlpJsonLogExporter();
    case 'grpc':
      return new OtlpGrpcLogExporter();
  }
}
