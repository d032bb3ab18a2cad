import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { ConsoleSpanExporter, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { FileSpanExporter } from './file-span-exporter.js';
import { OtlpProtobufSpanExporter } from './otlp-protobuf-span-exporter.js';
import { safeUrl } from './redact-secrets.js';
import type { TelemetryConfig } from './telemetry-config.js';

/** The exporter the configuration names; undefined for `none`. OTLP ones read OTEL_EXPORTER_OTLP_* themselves. */
export function createSpanExporter(config: TelemetryConfig): SpanExporter | undefined {
  switch (config.exporter) {
    case 'file':
      return new FileSpanExporter(config.traceFile, { maxBytes: config.traceFileMaxBytes, keep: config.traceFileKeep });
    case 'console':
      return new ConsoleSpanExporter();
    case 'otlp':
      return config.otlpProtocol === 'http/json' ? new OtlpJsonExporter() : new OtlpProtobufSpanExporter();
    case 'none':
      return undefined;
  }
}

/** Where spans go, for the start-up banner. */
export function describeExporter(config: TelemetryConfig): string {
  switch (config.exporter) {
    case 'file':
      return `file ${config.traceFile}`;
    case 'otlp':
      // Origin and path only: an endpoint may carry user:password@ or a key in its query.
      return `otlp ${config.otlpProtocol} ${safeUrl(process.env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'] || process.env['OTEL_EXPORTER_OTLP_ENDPOINT'] || 'http://localhost:4318')}`;
    default:
      return config.exporter;
  }
}
