import { metrics } from '@opentelemetry/api';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { afterAll, describe, expect, it } from 'vitest';
import { RejectSpanLimit, limitRejectSpans, rejectSpanLimit } from '../../src/telemetry/reject-span-limit.js';
import type { TestGateway } from '../../src/testing/index.js';
import { useTestGateways } from '../helpers/gateway.js';

const start = useTestGateways();

/** Collects on demand: the test reads a counter's sum when it wants it. */
class OnDemandReader extends MetricReader {
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected override onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}
const reader = new OnDemandReader();
const meterProvider = new MeterProvider({ readers: [reader] });
metrics.setGlobalMeterProvider(meterProvider);
afterAll(async () => {
  metrics.disable();
  await meterProvider.shutdown();
});

/** A counter's sum so far, over all its attribute sets; 0 before its first add. */
async function counterSum(name: string): Promise<number> {
  const { resourceMetrics } = await reader.collect();
  const metric = resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics).find((m) => m.descriptor.name === name);
  return (metric?.dataPoints ?? []).reduce((sum, point) => sum + (point.value as number), 0);
}

/** `count` POSTs without the token, all at once; the number of gateway.reject spans they made. */
async function unauthorizedBurst(g: TestGateway, count: number): Promise<number> {
  const before = rejectSpans(g);
  const answers = await Promise.all(Array.from({ length: count }, () => g.send({ chat_id: 'c', text: 'x' })));
  expect(answers.every((answer) => answer.status === 401)).toBe(true);
  return rejectSpans(g) - before;
}

const rejectSpans = (g: TestGateway) => g.telemetry.spans().filter((span) => span.name === 'gateway.reject').length;

describe('gateway.reject spans are rate-limited', () => {
  it('records about 10 a second by default, however many requests are refused', async () => {
    const g = await start({ env: { THREADLINE_WEBHOOK_TOKEN: 'right-token' } });
    const started = Date.now();
    const recorded = await unauthorizedBurst(g, 60);
    expect(recorded).toBeGreaterThanOrEqual(10);
    expect(recorded).toBeLessThanOrEqual(10 + Math.ceil(((Date.now() - started) / 1000) * 10));
  });

  it('counts the ones it drops, as a number and as the threadline.reject_spans.dropped counter', async () => {
    const g = await start({ env: { THREADLINE_WEBHOOK_TOKEN: 'right-token' } });
    const limit = limitRejectSpans(5, () => 0); // a clock that never moves: no refill
    const before = await counterSum('threadline.reject_spans.dropped');
    expect(await unauthorizedBurst(g, 12)).toBe(5);
    expect(limit.dropped).toBe(7);
    expect(rejectSpanLimit()).toBe(limit);
    expect((await counterSum('threadline.reject_spans.dropped')) - before).toBe(7);
  });
});

describe('RejectSpanLimit', () => {
  it('allows a burst of perSecond, then perSecond a second', () => {
    let now = 1_000;
    const limit = new RejectSpanLimit(10, () => now);
    const taken = () => Array.from({ length: 20 }, () => limit.take()).filter(Boolean).length;
    expect(taken()).toBe(10);
    now += 300;
    expect(taken()).toBe(3);
    now += 60_000;
    expect(taken()).toBe(10); // the bucket holds one second's worth, not a minute's
    expect(limit.dropped).toBe(10 + 17 + 10);
  });

  it('records none at 0', () => {
    const limit = new RejectSpanLimit(0);
    expect(limit.take()).toBe(false);
    expect(limit.dropped).toBe(1);
  });
});
