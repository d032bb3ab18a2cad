import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { ConsoleSpanExporter } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { OtlpProtobufSpanExporter } from '../../src/telemetry/otlp-protobuf-span-exporter.js';
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

  it('makes an OTLP exporter of the configured protocol', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' };
    expect(created(endpoint)).toBeInstanceOf(OtlpProtobufSpanExporter);
    expect(created({ ...endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })).toBeInstanceOf(OtlpJsonExporter);
  });

  it('makes none when tracing is off', () => {
    expect(created({ OTEL_SDK_DISABLED: 'true' })).toBeUndefined();
  });
});

describe('describeExporter', () => {
  it('names the file, the exporter kind or the OTLP protocol', () => {
    expect(describeExporter(readTelemetryConfig({ THREADLINE_TRACE_FILE: '/srv/t.jsonl' }))).toBe('file /srv/t.jsonl');
    expect(describeExporter(readTelemetryConfig({ OTEL_TRACES_EXPORTER: 'none' }))).toBe('none');
    expect(describeExporter(readTelemetryConfig({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }))).toMatch(
      /^otlp http\/json /,
    );
  });
});
