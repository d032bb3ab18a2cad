import { OTLPExporterBase, type OTLPExporterNodeConfigBase } from '@opentelemetry/otlp-exporter-base';
import { convertLegacyHttpOptions, createOtlpHttpExportDelegate } from '@opentelemetry/otlp-exporter-base/node-http';
import {
  ProtobufTraceSerializer,
  TraceExporterMetricsHelper,
  type IExportTraceServiceResponse,
  type ISerializer,
} from '@opentelemetry/otlp-transformer';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { encodeTraceExportRequest } from './otlp-trace-encoder.js';

const SERIALIZER: ISerializer<ReadableSpan[], IExportTraceServiceResponse> = {
  serializeRequest: encodeTraceExportRequest,
  deserializeResponse: (data) => ProtobufTraceSerializer.deserializeResponse(data),
};

/**
 * OTLP/HTTP protobuf span exporter: the one @opentelemetry/exporter-trace-otlp-proto builds
 * (configured by the same OTEL_EXPORTER_OTLP_* variables, with its transport, retries and
 * compression), with threadline's one-pass encoder in place of the library's serializer.
 * `config` takes the same options as that exporter; the environment fills in the rest.
 */
export class OtlpProtobufSpanExporter extends OTLPExporterBase<ReadableSpan[]> {
  constructor(config: OTLPExporterNodeConfigBase = {}) {
    super(
      createOtlpHttpExportDelegate(
        convertLegacyHttpOptions(config, 'TRACES', 'v1/traces', { 'Content-Type': 'application/x-protobuf' }),
        SERIALIZER,
        'otlp_http_span_exporter',
        TraceExporterMetricsHelper,
        config.selfObsMeterProvider,
      ),
    );
  }
}
