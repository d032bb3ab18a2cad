import { ROOT_CONTEXT } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { contextWithSession, createSession, names } from '../../src/session/index.js';
import { RedactSpanProcessor, SessionSpanProcessor, createSpanExporter, readTelemetryConfig, type OtlpProtocol } from '../../src/telemetry/index.js';
import { VERSION } from '../../src/version.js';
import { OtlpGrpcReceiver } from '../helpers/otlp-grpc-receiver.js';
import { OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { FULL_SESSION } from '../helpers/sessions.js';

/**
 * The exporter createSpanExporter makes for each OTEL_EXPORTER_OTLP_PROTOCOL, configured by
 * the environment as in production, delivers stamped spans to a collector on loopback, which
 * decodes them from the wire.
 */
const session = createSession(FULL_SESSION);
let http: OtlpReceiver;
let grpc: OtlpGrpcReceiver;
beforeAll(async () => {
  [http, grpc] = await Promise.all([OtlpReceiver.start(), OtlpGrpcReceiver.start()]);
});
afterAll(() => Promise.all([http.close(), grpc.close()]));
afterEach(() => {
  vi.unstubAllEnvs();
});

/** Ends one span in FULL_SESSION through the configured exporter and returns what the collector got. */
async function exportThrough(protocol: OtlpProtocol, received: ReceivedSpan[], endpoint: string): Promise<ReceivedSpan[]> {
  vi.stubEnv('OTEL_EXPORTER_OTLP_PROTOCOL', protocol);
  vi.stubEnv('OTEL_EXPORTER_OTLP_ENDPOINT', endpoint);
  const config = readTelemetryConfig(process.env);
  expect(config.exporter).toBe('otlp');
  const exporter = createSpanExporter(config)!;
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'threadline', 'service.version': VERSION }),
    spanProcessors: [new SessionSpanProcessor(), new RedactSpanProcessor(), new SimpleSpanProcessor(exporter)],
  });
  const before = received.length;
  provider.getTracer('threadline', VERSION).startSpan(`export.${protocol}`, {}, contextWithSession(ROOT_CONTEXT, FULL_SESSION)).end();
  await provider.forceFlush();
  await provider.shutdown();
  return received.slice(before);
}

function expectStamped(spans: readonly ReceivedSpan[], name: string): void {
  expect(spans.map((span) => span.name)).toEqual([name]);
  expect(spans[0]!.attributes).toMatchObject({
    [names.CHAT_ID]: session.chatId,
    [names.CHAT_THREAD_ID]: session.threadId!,
    [names.USER_ID]: session.userId!,
    [names.SESSION_ID]: session.sessionId,
  });
  expect(spans[0]!.resource).toMatchObject({ 'service.name': 'threadline', 'service.version': VERSION });
}

describe('OTLP export through the library exporters', () => {
  it('http/protobuf reaches an OTLP/HTTP collector as protobuf', async () => {
    // The general endpoint: the exporter appends /v1/traces, as the receiver expects.
    const spans = await exportThrough('http/protobuf', http.spans, http.url.replace(/\/v1\/traces$/, ''));
    expectStamped(spans, 'export.http/protobuf');
    expect(http.contentTypes).toContain('application/x-protobuf');
  });

  it('http/json reaches an OTLP/HTTP collector as JSON', async () => {
    const spans = await exportThrough('http/json', http.spans, http.url.replace(/\/v1\/traces$/, ''));
    expectStamped(spans, 'export.http/json');
    expect(http.contentTypes).toContain('application/json');
  });

  it('grpc reaches an OTLP/gRPC collector', async () => {
    const spans = await exportThrough('grpc', grpc.spans, grpc.url);
    expectStamped(spans, 'export.grpc');
    expect([...grpc.userAgents].join(' ')).toMatch(/OTel-OTLP-Exporter-JavaScript/);
  });
});
