import { context, diag, propagation } from '@opentelemetry/api';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startLocalServer, type LocalServer } from '../../src/testing/local-server.js';
import { installDiagLogger } from '../../src/telemetry/diag-logger.js';
import { createLogger } from '../../src/telemetry/logger.js';
import { readLogsConfig } from '../../src/telemetry/logs-config.js';
import { startLogs } from '../../src/telemetry/start-logs.js';
import { startTelemetry } from '../../src/telemetry/start-telemetry.js';
import { installContext } from '../../src/telemetry/install-context.js';
import { readTelemetryConfig } from '../../src/telemetry/index.js';
import { createTestTracing } from '../helpers/tracing.js';

/** A log record as an OTLP/HTTP collector decodes it from an OTLP/JSON export request. */
interface ReceivedLog {
  readonly traceId: string;
  readonly spanId: string;
  readonly severityNumber: number;
  readonly severityText: string;
  readonly body: string | undefined;
  readonly attributes: Record<string, unknown>;
  readonly resource: Record<string, unknown>;
}

interface JsonValue {
  readonly stringValue?: string;
  readonly intValue?: number | string;
  readonly boolValue?: boolean;
  readonly kvlistValue?: { readonly values: readonly JsonAttribute[] };
}
interface JsonAttribute {
  readonly key: string;
  readonly value: JsonValue;
}

function valueOf(value: JsonValue): unknown {
  if (value.kvlistValue !== undefined) return attributesOf(value.kvlistValue.values);
  return value.stringValue ?? (value.intValue === undefined ? value.boolValue : Number(value.intValue));
}

function attributesOf(attributes: readonly JsonAttribute[] = []): Record<string, unknown> {
  return Object.fromEntries(attributes.map((attribute) => [attribute.key, valueOf(attribute.value)]));
}

let collector: LocalServer;
const received: ReceivedLog[] = [];
const rawBodies: string[] = [];
const rawBytes: Buffer[] = [];
const tracing = createTestTracing();

beforeAll(async () => {
  collector = await startLocalServer((request) => {
    if (request.path !== '/v1/logs') return { status: 404 };
    rawBodies.push(request.body);
    rawBytes.push(request.raw);
    if (!(request.headers['content-type'] ?? '').includes('json')) return { status: 200, headers: { 'content-type': 'application/x-protobuf' }, body: '' };
    const exported = JSON.parse(request.body) as {
      resourceLogs: { resource: { attributes: JsonAttribute[] }; scopeLogs: { logRecords: Record<string, unknown>[] }[] }[];
    };
    for (const resourceLogs of exported.resourceLogs) {
      for (const record of resourceLogs.scopeLogs.flatMap((scope) => scope.logRecords)) {
        received.push({
          traceId: record['traceId'] as string,
          spanId: record['spanId'] as string,
          severityNumber: record['severityNumber'] as number,
          severityText: record['severityText'] as string,
          body: (record['body'] as JsonValue | undefined)?.stringValue,
          attributes: attributesOf(record['attributes'] as JsonAttribute[]),
          resource: attributesOf(resourceLogs.resource.attributes),
        });
      }
    }
    return { status: 200, headers: { 'content-type': 'application/json' }, body: '{}' };
  });
});
afterAll(async () => {
  await collector.close();
  await tracing.provider.shutdown();
});
afterEach(() => {
  vi.unstubAllEnvs();
  received.length = 0;
  rawBodies.length = 0;
  rawBytes.length = 0;
});

/** The environment of a gateway exporting its logs, as JSON, to the loopback collector. */
function logsEnv(): Record<string, string> {
  return {
    OTEL_LOGS_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_LOGS_PROTOCOL: 'http/json',
    OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: `${collector.origin}/v1/logs`,
    OTEL_EXPORTER_OTLP_LOGS_HEADERS: 'x-collector-key=logs-header-secret',
  };
}

/** Runs `write` inside a sampled span and returns that span's ids. */
function inSpan(write: () => void): { traceId: string; spanId: string } {
  return tracing.tracer.startActiveSpan('work', (span) => {
    write();
    span.end();
    return { traceId: span.spanContext().traceId, spanId: span.spanContext().spanId };
  });
}

describe('logs over OTLP (OTEL_LOGS_EXPORTER=otlp)', () => {
  it('is off by default: stdout JSON only, no destination of its own', () => {
    const config = readLogsConfig({});
    expect(config.exporter).toBe('none');
    expect(startLogs(config, { serviceName: 'threadline', serviceVersion: '0' }).destination).toBeUndefined();
    expect(readLogsConfig({ ...logsEnv(), OTEL_SDK_DISABLED: 'true' }).exporter).toBe('none');
  });

  it("exports each record with the trace and span it was written in, severity mapped, secrets redacted", async () => {
    for (const [name, value] of Object.entries(logsEnv())) vi.stubEnv(name, value);
    const logs = startLogs(readLogsConfig(process.env), { serviceName: 'gw-logs', serviceVersion: '9.9.9' });
    const logger = createLogger({ level: 'debug', destination: logs.destination! });
    const ids = inSpan(() => {
      logger.warn({ password: 'hunter2-password', url: 'https://user:url-secret@127.0.0.1:9/hook?token=query-secret', tenant: 'acme' }, 'delivery slow');
    });
    logger.debug('outside any span');
    await logs.shutdown();

    const inside = received.find((record) => record.body === 'delivery slow');
    expect(inside).toMatchObject({ traceId: ids.traceId, spanId: ids.spanId, severityNumber: 13, severityText: 'WARN' });
    expect(inside!.attributes).toMatchObject({ tenant: 'acme', password: '[redacted]', url: 'https://127.0.0.1:9/hook' });
    expect(inside!.resource).toMatchObject({ 'service.name': 'gw-logs', 'service.version': '9.9.9' });
    const outside = received.find((record) => record.body === 'outside any span');
    expect(outside).toMatchObject({ severityNumber: 5, severityText: 'DEBUG' });
    expect(outside!.traceId ?? '').toBe('');
    for (const secret of ['hunter2-password', 'url-secret', 'query-secret']) expect(rawBodies.join('\n')).not.toContain(secret);
  });

  it('speaks the default protocol, http/protobuf, too', async () => {
    const { OTEL_EXPORTER_OTLP_LOGS_PROTOCOL: _json, ...env } = logsEnv();
    for (const [name, value] of Object.entries(env)) vi.stubEnv(name, value);
    const config = readLogsConfig(process.env);
    expect(config.otlpProtocol).toBe('http/protobuf');
    const logs = startLogs(config, { serviceName: 'gw-logs', serviceVersion: '9.9.9' });
    const logger = createLogger({ destination: logs.destination! });
    const ids = inSpan(() => logger.error({ secret: 'protobuf-secret' }, 'in protobuf'));
    await logs.shutdown();
    const body = Buffer.concat(rawBytes);
    expect(body.includes(Buffer.from(ids.traceId, 'hex'))).toBe(true);
    expect(body.includes(Buffer.from(ids.spanId, 'hex'))).toBe(true);
    expect(body.toString('latin1')).toContain('in protobuf');
    expect(body.toString('latin1')).not.toContain('protobuf-secret');
  });

  it('startTelemetry wires it: the process logger exports, and shutdown flushes what is queued', async () => {
    for (const [name, value] of Object.entries(logsEnv())) vi.stubEnv(name, value);
    // A schedule delay of an hour: only shutdown's flush can send the record.
    vi.stubEnv('OTEL_BLRP_SCHEDULE_DELAY', '3600000');
    // startTelemetry registers the context manager and propagator test/setup.ts registered.
    context.disable();
    propagation.disable();
    const telemetry = startTelemetry(readTelemetryConfig({ ...process.env, OTEL_TRACES_EXPORTER: 'none', OTEL_METRICS_EXPORTER: 'none', THREADLINE_LOG_LEVEL: 'info' }));
    try {
      const ids = inSpan(() => telemetry.logger.info({ token: 'bearer-token-secret' }, 'turn done'));
      expect(received).toEqual([]);
      await telemetry.shutdown();
      expect(received.find((record) => record.body === 'turn done')).toMatchObject({ traceId: ids.traceId, spanId: ids.spanId, severityText: 'INFO' });
      expect(rawBodies.join('\n')).not.toContain('bearer-token-secret');
    } finally {
      diag.disable();
      context.disable();
      propagation.disable();
      installContext();
    }
  });

  it('startTelemetry logs what OTEL_LOGS_EXPORTER left out, once there is a logger', async () => {
    for (const [name, value] of Object.entries({ ...logsEnv(), OTEL_LOGS_EXPORTER: 'otlp,console' })) vi.stubEnv(name, value);
    context.disable();
    propagation.disable();
    const telemetry = startTelemetry(readTelemetryConfig({ ...process.env, OTEL_TRACES_EXPORTER: 'none', OTEL_METRICS_EXPORTER: 'none' }));
    try {
      await telemetry.shutdown();
      expect(received.find((record) => record.body?.includes('"console" is left out'))).toMatchObject({ severityText: 'WARN' });
    } finally {
      diag.disable();
      context.disable();
      propagation.disable();
      installContext();
    }
  });

  it("keeps OpenTelemetry's own warnings out of the export: a dead collector is reported, not fed", async () => {
    // A port that was just closed: every export is refused.
    const dead = await startLocalServer(() => ({ status: 200 }));
    const origin = dead.origin;
    await dead.close();
    for (const [name, value] of Object.entries({ ...logsEnv(), OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: `${origin}/v1/logs` })) vi.stubEnv(name, value);
    vi.stubEnv('OTEL_EXPORTER_OTLP_LOGS_TIMEOUT', '200');
    // Only forceFlush exports: each call below is one export of whatever is queued.
    vi.stubEnv('OTEL_BLRP_SCHEDULE_DELAY', '3600000');
    const lines: Record<string, unknown>[] = [];
    const stdout = { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) };
    const logs = startLogs(readLogsConfig(process.env), { serviceName: 'gw-logs', serviceVersion: '9.9.9' }, stdout);
    // As startTelemetry wires it: the process logger, writing through the OTLP destination, is the diag logger.
    const logger = createLogger({ destination: logs.destination! });
    installDiagLogger(logger);
    try {
      logger.info('one line');
      for (let flush = 0; flush < 4; flush++) await logs.forceFlush();
      // The one record's failed export, reported once; nothing queued after it, so no further export fails.
      expect(lines.filter((line) => line['component'] === 'opentelemetry')).toHaveLength(1);
      expect(lines).toHaveLength(2);
    } finally {
      diag.disable();
      await logs.shutdown();
    }
  });
});
