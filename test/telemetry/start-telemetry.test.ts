import { setImmediate as nextTurn } from 'node:timers/promises';
import { diag, propagation } from '@opentelemetry/api';
import { ConsoleSpanExporter } from '@opentelemetry/sdk-trace-base';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createPropagator, readTelemetryConfig } from '../../src/telemetry/index.js';

/**
 * startTelemetry starts the metrics OTEL_METRICS_EXPORTER names whether traces are on or
 * off, with the service's name and version, and its shutdown stops them. startMetrics is
 * replaced by a recorder: what it registers is start-metrics' own business.
 */
const { startMetrics, metricsShutdown } = vi.hoisted(() => {
  const metricsShutdown = vi.fn(() => Promise.resolve());
  const startMetrics = vi.fn(() => ({ ready: Promise.resolve('http://127.0.0.1:9464/metrics'), shutdown: metricsShutdown }));
  return { startMetrics, metricsShutdown };
});
let startTelemetry: typeof import('../../src/telemetry/start-telemetry.js').startTelemetry;
beforeAll(async () => {
  // test/setup.ts has loaded the telemetry modules already: load start-telemetry afresh over the mock.
  vi.resetModules();
  vi.doMock('../../src/telemetry/start-metrics.js', () => ({ startMetrics }));
  ({ startTelemetry } = await import('../../src/telemetry/start-telemetry.js'));
});

beforeEach(() => {
  startMetrics.mockClear();
  metricsShutdown.mockClear();
});
afterEach(() => {
  vi.restoreAllMocks();
  // startTelemetry installed its logger as OTel's diag logger.
  diag.disable();
});
// startTelemetry registers its propagator globally; the other tests of this process expect the default.
afterAll(() => {
  propagation.disable();
  propagation.setGlobalPropagator(createPropagator());
});

describe('startTelemetry and metrics', () => {
  it.each([
    ['off (OTEL_SDK_DISABLED)', { OTEL_SDK_DISABLED: 'true', OTEL_METRICS_EXPORTER: 'prometheus' }],
    ['off (OTEL_TRACES_EXPORTER=none)', { OTEL_TRACES_EXPORTER: 'none', OTEL_METRICS_EXPORTER: 'console' }],
    ['on', { OTEL_TRACES_EXPORTER: 'console', OTEL_METRICS_EXPORTER: 'console' }],
  ])('with traces %s, starts metrics once with the service and its version, and stops them on shutdown', async (_traces, env) => {
    // Silent: each start in one process warns, through the diag log, of a second context manager.
    const config = readTelemetryConfig({ OTEL_SERVICE_NAME: 'gateway-7', THREADLINE_LOG_LEVEL: 'silent', ...env });
    const telemetry = startTelemetry(config);
    expect(startMetrics.mock.calls).toEqual([[config.metrics, { serviceName: 'gateway-7', serviceVersion: config.serviceVersion }]]);
    expect(metricsShutdown).not.toHaveBeenCalled();
    await expect(telemetry.metricsReady).resolves.toBe('http://127.0.0.1:9464/metrics');
    await telemetry.shutdown();
    expect(metricsShutdown).toHaveBeenCalledTimes(1);
  });
});

describe("startTelemetry and OpenTelemetry's diag log", () => {
  it.each([
    ['off', { OTEL_TRACES_EXPORTER: 'none' }],
    ['on', { OTEL_TRACES_EXPORTER: 'console' }],
  ])('with traces %s, sends OpenTelemetry warnings and errors to the process logger, not below', (_traces, env) => {
    const telemetry = startTelemetry(readTelemetryConfig({ THREADLINE_LOG_LEVEL: 'silent', ...env }));
    const warn = vi.spyOn(telemetry.logger, 'warn');
    const error = vi.spyOn(telemetry.logger, 'error');
    const info = vi.spyOn(telemetry.logger, 'info');
    try {
      diag.warn('an exporter warning');
      diag.error('an export failed');
      diag.info('chatter');
      expect(warn).toHaveBeenCalledWith({ component: 'opentelemetry' }, 'an exporter warning');
      expect(error).toHaveBeenCalledWith({ component: 'opentelemetry' }, 'an export failed');
      expect(info).not.toHaveBeenCalled();
    } finally {
      diag.disable();
    }
  });
});

describe('startTelemetry shutdown', () => {
  it('waits for the trace flush when metrics fail to stop, then fails with the metrics error', async () => {
    let finishFlush!: () => void;
    const flushing = new Promise<void>((resolve) => (finishFlush = resolve));
    vi.spyOn(ConsoleSpanExporter.prototype, 'shutdown').mockReturnValueOnce(flushing);
    const failure = new Error('metrics could not stop');
    metricsShutdown.mockRejectedValueOnce(failure);
    const telemetry = startTelemetry(readTelemetryConfig({ OTEL_TRACES_EXPORTER: 'console', OTEL_METRICS_EXPORTER: 'console', THREADLINE_LOG_LEVEL: 'silent' }));
    let settled = false;
    const stopped = telemetry.shutdown().finally(() => (settled = true));
    stopped.catch(() => {});
    await nextTurn();
    expect(settled).toBe(false);
    finishFlush();
    await expect(stopped).rejects.toBe(failure);
  });
});
