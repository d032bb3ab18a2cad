import { createServer as createHttp2Server, type Http2Server } from 'node:http2';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { metrics } from '@opentelemetry/api';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ThreadlineError } from '../../src/errors.js';
import { GatewayMetrics } from '../../src/telemetry/gateway-metrics.js';
import { rejectSpansDropped } from '../../src/telemetry/span-drop-counters.js';
import { describeMetrics, startMetrics, type Metrics } from '../../src/telemetry/start-metrics.js';
import type { MetricsConfig, OtlpProtocol } from '../../src/telemetry/telemetry-config.js';
import { startLocalServer, type LocalRequest } from '../../src/testing/local-server.js';
import { until } from '../helpers/gateway.js';

const SERVICE = { serviceName: 'threadline-metrics-test', serviceVersion: '9.8.7' };

function config(overrides: Partial<MetricsConfig>): MetricsConfig {
  return { exporter: 'none', otlpProtocol: 'http/protobuf', prometheusHost: '127.0.0.1', prometheusPort: 0, exportIntervalMs: 100, ...overrides };
}

const started: Metrics[] = [];
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((m) => m.shutdown()));
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

function start(overrides: Partial<MetricsConfig>): Metrics {
  const running = startMetrics(config(overrides), SERVICE);
  started.push(running);
  return running;
}

function countSomething(value: number): void {
  metrics.getMeter('threadline').createCounter('threadline.test.things', { unit: '{thing}' }).add(value, { 'messaging.system': 'webhook' });
}

describe('startMetrics', () => {
  it('with none registers no meter provider', async () => {
    const before = metrics.getMeterProvider();
    const running = start({ exporter: 'none' });
    expect(await running.ready).toBeUndefined();
    expect(metrics.getMeterProvider()).toBe(before);
  });

  it('serves Prometheus on an ephemeral loopback port, with service.name and service.version, until shutdown', async () => {
    const running = start({ exporter: 'prometheus', prometheusPort: 0 });
    const url = await running.ready;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    countSomething(3);
    const text = await (await fetch(url!)).text();
    expect(text).toMatch(/^threadline_test_things_total\{[^}]*messaging_system="webhook"[^}]*\} 3$/m);
    expect(text).toMatch(/^target_info\{[^}]*service_name="threadline-metrics-test"[^}]*service_version="9\.8\.7"/m);
    expect((await fetch(url!.replace('/metrics', '/other'))).status).toBe(404);
    await running.shutdown();
    started.splice(0);
    await expect(fetch(url!)).rejects.toThrow();
    // The global is free again for the next start.
    const again = start({ exporter: 'prometheus', prometheusPort: 0 });
    expect(await again.ready).toMatch(/^http:/);
  });

  it('serves a histogram in seconds under _seconds, the Prometheus text content type, and no # UNIT line its name lacks', async () => {
    const url = await start({ exporter: 'prometheus', prometheusPort: 0 }).ready;
    metrics.getMeter('threadline').createHistogram('threadline.test.wait', { unit: 's' }).record(0.2, { 'messaging.system': 'webhook' });
    countSomething(1);
    const response = await fetch(url!);
    expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = await response.text();
    expect(text).toMatch(/^threadline_test_wait_seconds_bucket\{[^}]*le="5"[^}]*\} 1$/m);
    expect(text).toMatch(/^threadline_test_wait_seconds_sum\{[^}]*\} 0\.2$/m);
    expect(text).toContain('# UNIT threadline_test_wait_seconds seconds');
    for (const line of text.split('\n').filter((l) => l.startsWith('# UNIT '))) {
      const [, , name, unit] = line.split(' ');
      expect(name!.endsWith(`_${unit}`), line).toBe(true);
    }
  });

  it('exports a span-drop counter started at 0 once: the drop that follows raises that series, not a second one', async () => {
    const url = await start({ exporter: 'prometheus', prometheusPort: 0 }).ready;
    new GatewayMetrics().startAtZero(['webhook']);
    // As the refusal limit and the trace file take it, with no meter of their own.
    rejectSpansDropped().add(1);
    const text = await (await fetch(url!)).text();
    expect(text.split('\n').filter((line) => line.startsWith('# TYPE threadline_reject_spans_dropped_total '))).toHaveLength(1);
    expect(text).toMatch(/^threadline_reject_spans_dropped_total(\{[^}]*\})? 1$/m);
  });

  it('records the runtime (event loop, heap, GC) on its own meter provider while metrics are on', async () => {
    const url = await start({ exporter: 'prometheus', prometheusPort: 0 }).ready;
    // Garbage until a collection has run since the start: GC pauses are recorded as they happen.
    let text = '';
    await until(async () => {
      Array.from({ length: 100_000 }, (_, i) => ({ i }));
      text = await (await fetch(url!)).text();
      return text.includes('v8js_gc_duration_seconds_count');
    });
    expect(text).toMatch(/^nodejs_eventloop_utilization_ratio\{[^}]*otel_scope_name="@opentelemetry\/instrumentation-runtime-node"/m);
    expect(text).toMatch(/^v8js_memory_heap_used_bytes\{[^}]*v8js_heap_space_name="new_space"/m);
    expect(text).toMatch(/^nodejs_eventloop_time_seconds_total\{[^}]*nodejs_eventloop_state="idle"/m);
    expect(text).toMatch(/^v8js_gc_duration_seconds_bucket\{[^}]*v8js_gc_type="minor"/m);
  });

  it('lets OTEL_RESOURCE_ATTRIBUTES override service.version, as traces do, but not OTEL_SERVICE_NAME', async () => {
    withEnv('OTEL_RESOURCE_ATTRIBUTES', 'service.version=1.2.3-env,service.name=from-env');
    const url = await start({ exporter: 'prometheus', prometheusPort: 0 }).ready;
    const text = await (await fetch(url!)).text();
    expect(text).toMatch(/^target_info\{[^}]*service_version="1\.2\.3-env"/m);
    expect(text).toMatch(/^target_info\{[^}]*service_name="threadline-metrics-test"/m);
  });

  it('closes the Prometheus endpoint and frees the global even when the provider fails to shut down', async () => {
    const running = start({ exporter: 'prometheus', prometheusPort: 0 });
    const url = await running.ready;
    const failure = new Error('the last export failed');
    vi.spyOn(MeterProvider.prototype, 'shutdown').mockRejectedValueOnce(failure);
    cleanups.push(() => {
      vi.restoreAllMocks();
    });
    started.splice(0);
    await expect(running.shutdown()).rejects.toBe(failure);
    await expect(fetch(url!)).rejects.toThrow();
    expect(await start({ exporter: 'prometheus', prometheusPort: 0 }).ready).toMatch(/^http:/);
  });

  it('fails start-up with TL_LISTEN_FAILED, naming the variable, when the Prometheus port is taken', async () => {
    const holder: Server = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => holder.close(() => resolve())));
    const port = (holder.address() as AddressInfo).port;
    const running = start({ exporter: 'prometheus', prometheusPort: port });
    const failure = await running.ready.then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(ThreadlineError);
    expect((failure as ThreadlineError).code).toBe('TL_LISTEN_FAILED');
    expect((failure as Error).message).toContain(`127.0.0.1:${port} (EADDRINUSE)`);
    expect((failure as Error).message).toContain('OTEL_EXPORTER_PROMETHEUS_PORT');
  });

  it('refuses a second registration instead of exporting nothing', () => {
    start({ exporter: 'prometheus', prometheusPort: 0 });
    expect(() => startMetrics(config({ exporter: 'console' }), SERVICE)).toThrow(/registered already/);
  });

  describe.each<[OtlpProtocol, string]>([
    ['http/json', 'application/json'],
    ['http/protobuf', 'application/x-protobuf'],
  ])('otlp over %s', (protocol, contentType) => {
    it('pushes to OTEL_EXPORTER_OTLP_METRICS_ENDPOINT on the export interval', async () => {
      const received: LocalRequest[] = [];
      const collector = await startLocalServer((request) => {
        received.push(request);
        return { status: 200, headers: { 'content-type': contentType }, body: '' };
      });
      cleanups.push(() => collector.close());
      withEnv('OTEL_EXPORTER_OTLP_METRICS_ENDPOINT', `${collector.origin}/v1/metrics`);
      start({ exporter: 'otlp', otlpProtocol: protocol, exportIntervalMs: 100 });
      countSomething(2);
      await until(() => received.some((request) => request.raw.includes('threadline.test.things')));
      const request = received.find((r) => r.raw.includes('threadline.test.things'))!;
      expect(request.path).toBe('/v1/metrics');
      expect(request.headers['content-type']).toBe(contentType);
      expect(request.raw.includes('threadline-metrics-test')).toBe(true);
    });
  });

  it('otlp over grpc calls the collector MetricsService', async () => {
    const paths: string[] = [];
    const collector: Http2Server = createHttp2Server((request, response) => {
      paths.push(request.url);
      request.resume();
      request.on('end', () => {
        // An empty ExportMetricsServiceResponse: a gRPC frame of length 0, then status OK.
        response.writeHead(200, { 'content-type': 'application/grpc' });
        response.addTrailers({ 'grpc-status': '0' });
        response.end(Buffer.alloc(5));
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => collector.close(() => resolve())));
    withEnv('OTEL_EXPORTER_OTLP_METRICS_ENDPOINT', `http://127.0.0.1:${(collector.address() as AddressInfo).port}`);
    start({ exporter: 'otlp', otlpProtocol: 'grpc', exportIntervalMs: 100 });
    countSomething(1);
    await until(() => paths.length > 0);
    expect(paths[0]).toBe('/opentelemetry.proto.collector.metrics.v1.MetricsService/Export');
  });
});

/** Sets an environment variable for this test; the exporters read theirs when built. */
function withEnv(name: string, value: string): void {
  const before = process.env[name];
  process.env[name] = value;
  cleanups.push(() => {
    if (before === undefined) delete process.env[name];
    else process.env[name] = before;
  });
}

describe('describeMetrics, for the start banner', () => {
  it('names the exporter: the scrape URL for prometheus, the protocol for otlp, off for none', async () => {
    const running = start({ exporter: 'prometheus', prometheusPort: 0 });
    const url = await running.ready;
    expect(describeMetrics(config({ exporter: 'prometheus' }), url)).toBe(`prometheus ${url}`);
    expect(describeMetrics(config({ exporter: 'otlp', otlpProtocol: 'grpc' }), undefined)).toBe('otlp grpc');
    expect(describeMetrics(config({ exporter: 'console' }), undefined)).toBe('console');
    expect(describeMetrics(config({ exporter: 'none' }), undefined)).toBe('off');
  });
});
