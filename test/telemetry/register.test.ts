import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSession, names } from '../../src/session/index.js';
import { VERSION } from '../../src/version.js';
import { DOCUMENTED_DEFAULT_KEYS as DEFAULT_KEYS } from '../helpers/baggage.js';
import { startLoopbackServer, type LoopbackServer, type ReceivedRequest } from '../helpers/loopback-server.js';
import { startLocalServer, type LocalRequest } from '../../src/testing/local-server.js';
import { otlpAttribute, readOtlpLines, readOtlpSpans, type OtlpSpan } from '../helpers/otlp-file.js';
import { OtlpGrpcReceiver } from '../helpers/otlp-grpc-receiver.js';
import { parseBaggageHeader } from '../helpers/propagation.js';
import { FULL_SESSION, routingRecord } from '../helpers/sessions.js';
import { useTempDir } from '../helpers/temp-dir.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FIXTURE = 'test/telemetry/register.fixture.ts';
const SPAN_KIND_SERVER = 2; // OTLP enum values
const SPAN_KIND_CLIENT = 3;
const session = createSession(FULL_SESSION);
const tempDir = useTempDir('register');
let runs = 0;

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly dataDir: string;
}

/** Starts the fixture as the gateway starts, with a clean environment plus `env`. */
function runFixture(server: LoopbackServer, env: Record<string, string> = {}): Promise<Run> {
  const dataDir = join(tempDir(), `run-${++runs}`);
  const base: Record<string, string> = {};
  for (const key of ['PATH', 'HOME', 'TMPDIR', 'SystemRoot']) if (process.env[key] !== undefined) base[key] = process.env[key]!;
  const child = spawn(process.execPath, ['--import', 'tsx', '--import', './src/telemetry/register.ts', FIXTURE], {
    cwd: ROOT,
    env: { ...base, THREADLINE_DATA_DIR: dataDir, FIXTURE_URL: server.url, FIXTURE_SESSION: JSON.stringify(FULL_SESSION), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr, dataDir }));
  });
}

let server: LoopbackServer;
beforeAll(async () => {
  server = await startLoopbackServer();
});
afterAll(() => server.close());

describe('node --import threadline/telemetry/register', () => {
  let run: Run;
  let spans: OtlpSpan[];
  let fixtureRequests: ReceivedRequest[];
  const metricExports: LocalRequest[] = [];
  beforeAll(async () => {
    const before = server.received.length;
    // threadline's own metrics (the runtime's) go to the metrics endpoint; it answers an empty ExportMetricsServiceResponse.
    const collector = await startLocalServer((request) => {
      metricExports.push(request);
      return { status: 200, headers: { 'content-type': 'application/x-protobuf' }, body: '' };
    });
    // Were the SDK to push logs, they would arrive here instead of at localhost:4318; were it to
    // register a meter provider of its own, threadline's startMetrics would refuse to start.
    try {
      run = await runFixture(server, {
        OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: `${collector.origin}/v1/metrics`,
        OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: `${server.url}v1/logs`,
      });
    } finally {
      await collector.close();
    }
    spans = run.code === 0 ? readOtlpSpans(join(run.dataDir, 'traces.jsonl')) : [];
    fixtureRequests = server.received.slice(before);
  });
  // The fixture also calls a server of its own; this is the client span of the call to ours.
  const clientSpanToServer = () =>
    spans.find((span) => span.kind === SPAN_KIND_CLIENT && otlpAttribute(span, 'url.full')?.startsWith(server.url) === true);

  it('runs the application and exits 0', () => {
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ status: 200, chatIdAfterFetch: session.chatId, exporter: 'file' });
  });

  it("exports the application's span and the undici client span to THREADLINE_DATA_DIR/traces.jsonl", () => {
    expect(spans.map((span) => span.name)).toContain('fixture.work');
    const work = spans.find((span) => span.name === 'fixture.work')!;
    const client = clientSpanToServer();
    expect(client).toBeDefined();
    expect(client!.traceId).toBe(work.traceId);
    expect(client!.parentSpanId).toBe(work.spanId);
  });

  it('makes no span for an inbound request: gateway.message is where a message trace starts', () => {
    expect(spans.filter((span) => span.kind === SPAN_KIND_CLIENT)).toHaveLength(2);
    expect(spans.filter((span) => span.kind === SPAN_KIND_SERVER)).toEqual([]);
  });

  it("makes no second span for a delivery's request: the span it runs in is the client span", () => {
    const forDelivery = spans.filter((span) => otlpAttribute(span, 'url.full')?.endsWith('/deliveries') === true);
    expect(forDelivery.map((span) => span.name)).toEqual(['fixture.deliver']);
  });

  it("makes only the application's request: no OTLP metrics or logs without a collector", () => {
    expect(fixtureRequests.map((request) => `${request.method} ${request.path}`)).toEqual(['GET /']);
  });

  it("exports threadline's runtime metrics to the metrics endpoint, and no instrumentation's (their meters stay no-ops)", () => {
    expect(metricExports.length).toBeGreaterThan(0);
    expect(metricExports.some((request) => request.raw.includes('v8js.memory.heap.used'))).toBe(true);
    expect(metricExports.some((request) => request.raw.includes('http.client.request.duration'))).toBe(false);
  });

  it('stamps every span with the routing of its session', () => {
    expect(spans.length).toBeGreaterThanOrEqual(2);
    for (const span of spans) {
      expect({ span: span.name, chatId: otlpAttribute(span, names.CHAT_ID), threadId: otlpAttribute(span, names.CHAT_THREAD_ID) }).toEqual({
        span: span.name,
        chatId: session.chatId,
        threadId: session.threadId,
      });
      expect(otlpAttribute(span, names.SESSION_ID)).toBe(session.sessionId);
      expect(otlpAttribute(span, names.USER_ID)).toBe(session.userId);
    }
  });

  it("names the service and package.json's version on the resource", () => {
    const resources = readOtlpLines(join(run.dataDir, 'traces.jsonl')).flatMap((line) => line.resourceSpans.map((spans) => spans.resource));
    expect(resources.length).toBeGreaterThan(0);
    for (const resource of resources) {
      const attribute = (key: string) => resource.attributes.find((entry) => entry.key === key)?.value.stringValue;
      expect({ name: attribute('service.name'), version: attribute('service.version') }).toEqual({ name: 'threadline', version: VERSION });
    }
  });

  it('sends trace context and the default baggage keys to the server', () => {
    const { headers } = fixtureRequests.at(-1)!;
    const client = clientSpanToServer()!;
    expect(headers['traceparent']).toBe(`00-${client.traceId}-${client.spanId}-01`);
    expect(parseBaggageHeader(headers['baggage'] as string)).toEqual(routingRecord(session, DEFAULT_KEYS));
  });
});

describe('register with OTEL_EXPORTER_OTLP_PROTOCOL=grpc', () => {
  it('exports the stamped spans to an OTLP/gRPC collector, under the service and its version', async () => {
    const collector = await OtlpGrpcReceiver.start();
    try {
      const run = await runFixture(server, {
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
        OTEL_METRICS_EXPORTER: 'none',
      });
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({ status: 200, exporter: 'otlp' });
      const work = collector.spans.find((span) => span.name === 'fixture.work');
      expect(work).toBeDefined();
      expect(work!.attributes).toMatchObject({ [names.CHAT_ID]: session.chatId, [names.USER_ID]: session.userId! });
      expect(work!.resource).toMatchObject({ 'service.name': 'threadline', 'service.version': VERSION });
    } finally {
      await collector.close();
    }
  });
});

describe('register with OTEL_RESOURCE_ATTRIBUTES', () => {
  it('takes service.version from it (metrics do too: start-metrics.test.ts), but not service.name', async () => {
    const run = await runFixture(server, { OTEL_RESOURCE_ATTRIBUTES: 'service.version=1.2.3-env,service.name=from-env' });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const resources = readOtlpLines(join(run.dataDir, 'traces.jsonl')).flatMap((line) => line.resourceSpans.map((spans) => spans.resource));
    expect(resources.length).toBeGreaterThan(0);
    for (const resource of resources) {
      const attribute = (key: string) => resource.attributes.find((entry) => entry.key === key)?.value.stringValue;
      expect({ name: attribute('service.name'), version: attribute('service.version') }).toEqual({ name: 'threadline', version: '1.2.3-env' });
    }
  });
});

describe('register honours OTEL_PROPAGATORS', () => {
  /** The headers of the fixture's call to our server, and the client span that made it. */
  async function outgoing(propagators: string): Promise<{ headers: ReceivedRequest['headers']; client: OtlpSpan }> {
    const before = server.received.length;
    const run = await runFixture(server, { OTEL_PROPAGATORS: propagators });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const requests = server.received.slice(before);
    expect(requests).toHaveLength(1);
    const client = readOtlpSpans(join(run.dataDir, 'traces.jsonl')).find(
      (span) => span.kind === SPAN_KIND_CLIENT && otlpAttribute(span, 'url.full')?.startsWith(server.url) === true,
    );
    expect(client).toBeDefined();
    return { headers: requests[0]!.headers, client: client! };
  }

  it('b3: the outgoing call carries a b3 header for its client span instead of traceparent, and the session baggage', async () => {
    const { headers, client } = await outgoing('b3');
    expect(headers['b3']).toBe(`${client.traceId}-${client.spanId}-1`);
    expect(headers['traceparent']).toBeUndefined();
    expect(parseBaggageHeader(headers['baggage'] as string)).toEqual(routingRecord(session, DEFAULT_KEYS));
  });

  it('none: the outgoing call carries only the session baggage', async () => {
    const { headers } = await outgoing('none');
    for (const header of ['traceparent', 'tracestate', 'b3', 'x-b3-traceid', 'uber-trace-id']) expect(headers[header], header).toBeUndefined();
    expect(parseBaggageHeader(headers['baggage'] as string)).toEqual(routingRecord(session, DEFAULT_KEYS));
  });
});

describe('register with tracing off', () => {
  it('still carries the session through awaits, and writes no trace file', async () => {
    const run = await runFixture(server, { OTEL_SDK_DISABLED: 'true' });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ status: 200, chatIdAfterFetch: session.chatId, exporter: 'none' });
    expect(existsSync(join(run.dataDir, 'traces.jsonl'))).toBe(false);
  });
});

describe('register with a bad configuration', () => {
  it.each([
    ['THREADLINE_SPAN_PRIVACY', { THREADLINE_SPAN_PRIVACY: 'bogus' }],
    ['THREADLINE_SPAN_HMAC_KEY', { THREADLINE_SPAN_PRIVACY: 'hmac', THREADLINE_SPAN_HMAC_KEY: 'too-short' }],
    ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', { OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/xml' }],
    ['OTEL_PROPAGATORS', { OTEL_PROPAGATORS: 'tracecontext,xray' }],
  ])('exits 1 before the application runs, with one line naming %s and TL_CONFIG_INVALID', async (variable, env) => {
    const requestsBefore = server.received.length;
    const run = await runFixture(server, env);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    const lines = run.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^threadline: /);
    expect(lines[0]).toContain('TL_CONFIG_INVALID');
    expect(lines[0]).toContain(variable);
    expect(server.received.length).toBe(requestsBefore);
    expect(existsSync(join(run.dataDir, 'traces.jsonl'))).toBe(false);
  });
});
