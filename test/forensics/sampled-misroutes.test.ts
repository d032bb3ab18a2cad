/**
 * `threadline misroutes` under 1% head sampling: a gateway whose every trace the ratio sampler
 * drops (trace ids chosen so) still exports a misroute, a given-up reply, a retried reply, and
 * background notifications lost two ways, as forensic copies in the trace file, and the
 * command finds each, naming the trace that was not sampled. Also: an authenticated caller's
 * `traceparent …-00` does not switch off the gateway's spans, nor its `-01` force them on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../src/testing/index.js';
import { deliverLater } from '../../src/tools/deliver-later.js';
import { until } from '../helpers/gateway.js';
import { LEAK_QUESTION, LeakyAgent } from './leaky-agent.js';
import { installSampledTelemetry, isSampled, sampledByRatio } from './sampled-telemetry.js';

const telemetry = installSampledTelemetry();
const { endedIn, exportedTraceIds } = telemetry;

const leaky = new LeakyAgent(() => g);
let g: TestGateway;

const say: LeakyAgent['say'] = (...args) => leaky.say(...args);

async function sayAndWait(chat: string, thread: string | undefined, text: string): Promise<string> {
  const before = g.receiver.unique().size;
  const traceId = await say(chat, thread, text);
  await g.receiver.waitFor(before + 1);
  return traceId;
}






beforeAll(async () => {
  g = await startTestGateway({ webhookToken: true, env: { THREADLINE_STRICT_ROUTING: '0' }, agent: leaky.agent });
});

afterAll(async () => {
  await g?.stop();
  await telemetry.close();
});

describe('misroutes and lost work under 1% head sampling', () => {
  let misrouteTrace: string;
  let failedTrace: string;
  let retriedTrace: string;
  let notice: { givenUp: string; notRecorded: string };

  beforeAll(async () => {
    await sayAndWait('ci', 'build-42', 'starting build 42');
    misrouteTrace = await sayAndWait('ci', 'build-17', LEAK_QUESTION);

    // A reply its platform refuses for good: given up, a dead letter.
    g.receiver.failNext(1, 400);
    failedTrace = await say('ops', undefined, '/help');
    await until(async () => (await g.deliveries({ failedOnly: true })).length === 1);

    // A reply that fails once, then goes through on its retry, in a trace of its own.
    g.receiver.failNext(1, 503);
    retriedTrace = await sayAndWait('ops', 'retry', '/help');

    // A watcher's notification refused for good, and one that fails before it is recorded (no home channel).
    const origin = leaky.routings.get('starting build 42')!;
    g.receiver.failNext(1, 400);
    await deliverLater(g.running.gateway.router, origin, 'terminal.notify', { id: 'proc:given-up:done', kind: 'notification', text: 'build done' });
    await until(async () => (await g.deliveries({ failedOnly: true })).length === 2);
    await expect(
      deliverLater(g.running.gateway.router, origin, 'terminal.notify', { id: 'proc:no-home:done', kind: 'notification', text: 'build done', target: { to: 'home' } }),
    ).rejects.toMatchObject({ code: 'TL_HOME_UNSET' });
    notice = { givenUp: 'proc:given-up:done', notRecorded: 'proc:no-home:done' };
    // The retry runs from the outbox loop, in a trace of its own: its span has ended once the store says done.
    await until(() => telemetry.ended.filter((span) => span.name === 'gateway.deliver' && span.attributes['delivery.attempt'] === 2).length === 1);
  });

  it('samples none of these traces: their own spans are recorded, not exported', () => {
    const exported = exportedTraceIds();
    for (const traceId of [misrouteTrace, failedTrace, retriedTrace]) {
      const delivers = endedIn(traceId, 'gateway.deliver');
      expect(delivers.length).toBeGreaterThan(0);
      expect(delivers.some(isSampled)).toBe(false);
      expect(exported.has(traceId)).toBe(false);
    }
    const notices = telemetry.ended.filter((span) => span.name === 'terminal.notify');
    expect(notices).toHaveLength(2);
    expect(notices.some(isSampled)).toBe(false);
  });

  it('finds the misroute, flagged by the guard, linked to the trace that was not sampled', async () => {
    const { code, report } = await telemetry.misroutes();
    expect(code).toBe(1);
    const [misroute, ...others] = report.misroutes;
    expect(others).toEqual([]);
    const deliver = endedIn(misrouteTrace, 'gateway.deliver').find((span) => span.events.some((event) => event.name === 'routing.mismatch'))!;
    expect(misroute).toMatchObject({
      deliveryId: deliver.attributes['delivery.id'],
      origin: { platform: 'webhook', chatId: 'ci', threadId: 'build-17' },
      destination: { platform: 'webhook', chatId: 'ci', threadId: 'build-42' },
      outcome: 'sent',
      detectedBy: 'guard',
      sampledOut: { traceId: misrouteTrace, spanId: deliver.spanContext().spanId },
      work: { traceId: misrouteTrace, name: '(trace not sampled)' },
    });
    // The copy lives in a sampled trace of its own, which a viewer can open.
    expect(misroute!.delivery.traceId).not.toBe(misrouteTrace);
    expect(exportedTraceIds().has(misroute!.delivery.traceId)).toBe(true);
  });

  it('finds the given-up reply and both lost notifications, and not the reply that went through on its retry', async () => {
    const { report } = await telemetry.misroutes();
    const failedDeliver = endedIn(failedTrace, 'gateway.deliver')[0]!;
    const byId = new Map(report.lost.map((lost) => [lost.id, lost]));
    expect(byId.get(String(failedDeliver.attributes['delivery.id']))).toMatchObject({
      what: 'delivery',
      state: 'not sent',
      origin: { platform: 'webhook', chatId: 'ops' },
      sampledOut: { traceId: failedTrace },
    });
    expect(byId.get(notice.givenUp)).toMatchObject({ what: 'watcher notification', state: 'not sent', destination: { chatId: 'ci', threadId: 'build-42' } });
    expect(byId.get(notice.notRecorded)).toMatchObject({ what: 'watcher notification', state: 'not recorded', lastError: expect.stringContaining('home') });
    const retried = String(endedIn(retriedTrace, 'gateway.deliver')[0]!.attributes['delivery.id']);
    expect(byId.has(retried)).toBe(false);
    expect(report.lost).toHaveLength(3);
  });
});

describe("a caller's sampled flag", () => {
  it("-00 from an authenticated caller does not switch off the gateway's spans: its own ratio decides", async () => {
    const kept = '00000000000000000000000000000001';
    expect(sampledByRatio(kept)).toBe(true);
    const parented = await say('ci', 'flags', '/status', { traceparent: `00-${kept}-00000000000000a1-00` });
    expect(parented).toBe(kept);
    await until(() => endedIn(kept, 'gateway.message').length === 1);
    const [message] = endedIn(kept, 'gateway.message');
    expect(message!.parentSpanContext?.spanId).toBe('00000000000000a1');
    expect(isSampled(message!)).toBe(true);
  });

  it('-01 does not force sampling on a trace the ratio drops', async () => {
    const dropped = 'ffffffff000000000000000000000000';
    expect(sampledByRatio(dropped)).toBe(false);
    expect(await say('ci', 'flags', '/status', { traceparent: `00-${dropped}-00000000000000a2-01` })).toBe(dropped);
    // Its reply's span is recorded (to be judged at its end), so it is seen ending; not sampled, like the rest of its trace.
    await until(() => endedIn(dropped, 'gateway.deliver').length === 1);
    expect(telemetry.ended.filter((span) => span.spanContext().traceId === dropped).some(isSampled)).toBe(false);
    await telemetry.flush();
    expect(exportedTraceIds().has(dropped)).toBe(false);
  });
});
