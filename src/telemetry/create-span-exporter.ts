import { OTLPTraceExporter as OtlpGrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { ConsoleSpanExporter, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { FileSpanExporter } from './file-span-exporter.js';
import { otlpEndpoint } from './otlp-endpoint.js';
import { safeUrl } from '../text/redact-secrets.js';
import type { OtlpProtocol, TelemetryConfig } from './telemetry-config.js';

/** The exporter the configuration names; undefined for `none`. OTLP ones read OTEL_EXPORTER_OTLP_* themselves. */
export function createSpanExporter(config: TelemetryConfig): SpanExporter | undefined {
  switch (config.exporter) {
    case 'file':
      return new FileSpanExporter(config.traceFile, { maxBytes: config.traceFileMaxBytes, keep: config.traceFileKeep });
    case 'console':
      return new ConsoleSpanExporter();
    case 'otlp':
      return otlpExporter(config.otlpProtocol);
    case 'none':
      return undefined;
  }
}

function otlpExporter(protocol: OtlpProtocol): SpanExporter {
  switch (protocol) {
    case 'http/protobuf':
      return new OtlpProtobufExporter();
    case 'http/json':
      return new OtlpJsonExporter();
    case 'grpc':
      return new OtlpGrpcExporter();
  }
}

/** Where spans go, for the start-up banner. */
export function describeExporter(config: TelemetryConfig, env: NodeJS.ProcessEnv = process.env): string {
  switch (config.exporter) {
    case 'file':
      return `file ${config.traceFile}`;
    case 'otlp':
      // Origin and path only: an endpoint may carry user:password@ or a key in its query.
      return `otlp ${config.otlpProtocol} ${safeUrl(otlpEndpoint('traces', config.otlpProtocol, env))}`;
    default:
      return config.exporter;
  }
}

