import { propagation } from '@opentelemetry/api';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
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
    const config = readTelemetryConfig({ OTEL_SERVICE_NAME: 'gateway-7', ...env });
    const telemetry = startTelemetry(config);
    expect(startMetrics.mock.calls).toEqual([[config.metrics, { serviceName: 'gateway-7', serviceVersion: config.serviceVersion }]]);
    expect(metricsShutdown).not.toHaveBeenCalled();
    await expect(telemetry.metricsReady).resolves.toBe('http://127.0.0.1:9464/metrics');
    await telemetry.shutdown();
    expect(metricsShutdown).toHaveBeenCalledTimes(1);
  });
});
