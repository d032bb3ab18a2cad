/**
 * `threadline misroutes` under 1% head sampling with the outbox on Redis: a worker's attempt
 * (its span a child of the router's, across Redis) that fails for good, one that is retried,
 * and a lenient misroute are exported as forensic copies though their traces are not sampled.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../src/testing/index.js';
import { until } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';
import { LEAK_QUESTION, LeakyAgent } from './leaky-agent.js';
import { installSampledTelemetry, isSampled } from './sampled-telemetry.js';

const telemetry = installSampledTelemetry();
const redis = useRedis();
const leaky = new LeakyAgent(() => g);
let g: TestGateway;

const say: LeakyAgent['say'] = (...args) => leaky.say(...args);

/** The worker's gateway.deliver spans (CONSUMER: no delivery.target) of a trace. */
function workerAttempts(traceId: string) {
  return telemetry.endedIn(traceId, 'gateway.deliver').filter((span) => span.attributes['delivery.target'] === undefined);
}

beforeAll(async () => {
  g = await startTestGateway({ webhookToken: true, env: { THREADLINE_REDIS_URL: redis.url, THREADLINE_REDIS_PREFIX: redis.prefix(), THREADLINE_STRICT_ROUTING: '0' }, agent: leaky.agent });
});

afterAll(async () => {
  await g?.stop();
  await telemetry.close();
});

describe('misroutes and lost work under 1% head sampling, the outbox on Redis', () => {
  let misrouteTrace: string;
  let failedTrace: string;
  let retriedTrace: string;

  beforeAll(async () => {
    await say('ci', 'build-42', 'starting build 42');
    await g.receiver.waitFor(1);
    misrouteTrace = await say('ci', 'build-17', LEAK_QUESTION);
    await g.receiver.waitFor(2);
    g.receiver.failNext(1, 400);
    failedTrace = await say('ops', undefined, '/help');
    await until(() => workerAttempts(failedTrace).length === 1);
    g.receiver.failNext(1, 503);
    retriedTrace = await say('ops', 'retry', '/help');
    await until(() => workerAttempts(retriedTrace).length === 2);
  });

  it('samples none of these traces', () => {
    const exported = telemetry.exportedTraceIds();
    for (const traceId of [misrouteTrace, failedTrace, retriedTrace]) {
      expect(workerAttempts(traceId).length).toBeGreaterThan(0);
      expect(telemetry.ended.filter((span) => span.spanContext().traceId === traceId).some(isSampled)).toBe(false);
      expect(exported.has(traceId)).toBe(false);
    }
  });

  it('finds the misroute (queued: its send went through and was not kept), the given-up reply, and not the retried one', async () => {
    const { code, report } = await telemetry.misroutes();
    expect(code).toBe(1);
    expect(report.misroutes).toMatchObject([
      { destination: { chatId: 'ci', threadId: 'build-42' }, origin: { chatId: 'ci', threadId: 'build-17' }, detectedBy: 'guard', outcome: 'queued', sampledOut: { traceId: misrouteTrace } },
    ]);
    const failedId = String(workerAttempts(failedTrace)[0]!.attributes['delivery.id']);
    expect(report.lost).toMatchObject([{ id: failedId, state: 'not sent', attempts: 1, sampledOut: { traceId: failedTrace } }]);
  });
});
