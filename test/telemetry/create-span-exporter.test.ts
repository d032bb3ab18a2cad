import { OTLPTraceExporter as OtlpGrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { ConsoleSpanExporter } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { FileSpanExporter, createSpanExporter, describeExporter, readTelemetryConfig } from '../../src/telemetry/index.js';

const exporters: { shutdown(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(exporters.splice(0).map((exporter) => exporter.shutdown()));
});

function created(env: NodeJS.ProcessEnv) {
  const exporter = createSpanExporter(readTelemetryConfig(env));
  if (exporter !== undefined) exporters.push(exporter);
  return exporter;
}

describe('createSpanExporter', () => {
  it('makes a file exporter for the configured trace file', () => {
    const exporter = created({ THREADLINE_TRACE_FILE: '/tmp/threadline-never-written/traces.jsonl' });
    expect(exporter).toBeInstanceOf(FileSpanExporter);
    expect((exporter as FileSpanExporter).path).toBe('/tmp/threadline-never-written/traces.jsonl');
  });

  it('makes a console exporter', () => {
    expect(created({ OTEL_TRACES_EXPORTER: 'console' })).toBeInstanceOf(ConsoleSpanExporter);
  });

  it("makes the library's OTLP exporter of the configured protocol", () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' };
    expect(created(endpoint)).toBeInstanceOf(OtlpProtobufExporter);
    expect(created({ ...endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })).toBeInstanceOf(OtlpJsonExporter);
    expect(created({ ...endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toBeInstanceOf(OtlpGrpcExporter);
    expect(created({ ...endpoint, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' })).toBeInstanceOf(OtlpGrpcExporter);
  });

  it('makes none when tracing is off', () => {
    expect(created({ OTEL_SDK_DISABLED: 'true' })).toBeUndefined();
  });
});

describe('describeExporter', () => {
  const described = (env: NodeJS.ProcessEnv) => describeExporter(readTelemetryConfig(env), env);

  it('names the file, the exporter kind or the OTLP protocol', () => {
    expect(described({ THREADLINE_TRACE_FILE: '/srv/t.jsonl' })).toBe('file /srv/t.jsonl');
    expect(described({ OTEL_TRACES_EXPORTER: 'none' })).toBe('none');
    expect(described({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })).toMatch(/^otlp http\/json /);
  });

  it("names the endpoint each protocol's exporter resolves, with its default port", () => {
    const otlp = { OTEL_TRACES_EXPORTER: 'otlp' };
    expect(described(otlp)).toBe('otlp http/protobuf http://localhost:4318/v1/traces');
    expect(described({ ...otlp, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toBe('otlp grpc http://localhost:4317');
    const general = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4317' };
    expect(described({ ...general, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toBe('otlp grpc http://collector:4317');
    expect(described({ ...general, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })).toBe('otlp http/protobuf http://collector:4318/v1/traces');
    expect(described({ ...general, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example.com/in' })).toBe(
      'otlp http/protobuf https://traces.example.com/in',
    );
  });

  it('shows no credential or query of the endpoint', () => {
    const env = { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_ENDPOINT: 'https://user:pa55@collector.example.com:4317?key=q1' };
    expect(described(env)).toBe('otlp grpc https://collector.example.com:4317/');
  });
});
