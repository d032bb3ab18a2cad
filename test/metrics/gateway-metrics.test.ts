import type { Attributes } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import type { Agent } from '../../src/agent/agent.js';
import type { CollectedMetrics, TestGateway } from '../../src/testing/index.js';
import { until, useTestGateways } from '../helpers/gateway.js';
import { useRawConnections } from '../helpers/raw-http.js';

const start = useTestGateways();
const connect = useRawConnections();

/**
 * The process's counters outlive a test's gateway: each test reads what its own traffic
 * added, from a collection taken when it began.
 */
async function counting(g: TestGateway): Promise<(name: string, attributes?: Attributes) => Promise<number>> {
  const before = await g.metrics();
  return async (name, attributes) => (await g.metrics()).value(name, attributes) - before.value(name, attributes);
}

const WEBHOOK = { 'messaging.system': 'webhook' };

/** The sum of threadline.delivery.latency over the points with `attributes`. */
function latencySum(collected: CollectedMetrics, attributes: Attributes): number {
  return collected.points
    .filter((point) => point.name === 'threadline.delivery.latency' && Object.entries(attributes).every(([key, value]) => point.attributes[key] === value))
    .reduce((total, point) => total + (point.sum ?? 0), 0);
}

describe('gateway metrics', () => {
  it('counts accepted messages, turns by result with their duration, and sent deliveries, by platform', async () => {
    const g = await start();
    const added = await counting(g);
    expect((await g.send({ chat_id: 'a', text: 'one' })).status).toBe(202);
    expect((await g.send({ chat_id: 'b', text: 'two' })).status).toBe(202);
    await until(async () => (await added('threadline.deliveries')) === 2);
    expect(await added('threadline.messages.accepted', WEBHOOK)).toBe(2);
    expect(await added('threadline.turn.duration', { ...WEBHOOK, 'threadline.turn.result': 'ok' })).toBe(2);
    expect(await added('threadline.deliveries', { ...WEBHOOK, 'threadline.delivery.kind': 'reply', 'threadline.delivery.result': 'sent' })).toBe(2);
    expect(await added('threadline.messages.refused')).toBe(0);
    const turns = (await g.metrics()).points.find((point) => point.name === 'threadline.turn.duration')!;
    expect(turns.sum).toBeGreaterThan(0);
    expect(turns.sum).toBeLessThan(10);
  });

  it('counts a failed turn as an error', async () => {
    const failing: Agent = {
      handle: async () => {
        throw new Error('model unavailable');
      },
    };
    const g = await start({ agent: failing });
    const added = await counting(g);
    await g.send({ chat_id: 'a', text: 'x' });
    await until(async () => (await added('threadline.turn.duration')) === 1);
    expect(await added('threadline.turn.duration', { 'threadline.turn.result': 'error' })).toBe(1);
  });

  it('counts each refusal once, by platform and code, whether intake or the HTTP layer refused it', async () => {
    const g = await start({ env: { THREADLINE_OUTBOX_MAX_PER_CHAT: '1', THREADLINE_DELIVERY_BACKOFF_MS: '60000', THREADLINE_DELIVERY_BACKOFF_MAX_MS: '60000' } });
    const added = await counting(g);
    // The HTTP layer: a body without its text.
    expect((await g.send({ chat_id: 'a' } as never)).status).toBe(400);
    // Intake: the chat's one open delivery is stuck, so its next message is refused.
    g.receiver.failEvery(503);
    await g.send({ chat_id: 'a', text: 'first' });
    await until(async () => (await g.deliveries())[0]?.attempts === 1);
    expect((await g.send({ chat_id: 'a', text: 'second' })).status).toBe(429);
    // Before any request exists: malformed HTTP, no platform known.
    const raw = connect(g.url, 'NONSENSE\r\n\r\n');
    await raw.closed(5_000);
    expect(raw.received()).toContain('400 Bad Request');
    expect(await added('threadline.messages.refused', { ...WEBHOOK, 'error.type': 'TL_BAD_REQUEST' })).toBe(1);
    expect(await added('threadline.messages.refused', { ...WEBHOOK, 'error.type': 'TL_CHAT_BACKLOG_FULL' })).toBe(1);
    const unattributed = (await g.metrics()).points.filter(
      (point) => point.name === 'threadline.messages.refused' && point.attributes['messaging.system'] === undefined,
    );
    expect(unattributed.map((point) => [point.attributes['error.type'], point.value])).toEqual([['TL_BAD_REQUEST', 1]]);
    expect(await added('threadline.messages.refused')).toBe(3);
    expect(await added('threadline.messages.accepted')).toBe(1);
  });

  it('counts a refusal by the HTTP layer under the platform whose intake route refused it', async () => {
    const g = await start({ telegram: true, slack: true });
    const added = await counting(g);
    expect((await g.sendTelegram({ update_id: 1 }, 'wrong secret')).status).toBe(401);
    expect((await g.sendSlack({ type: 'event_callback' }, 'wrong signing secret')).status).toBe(401);
    expect((await g.sendSlack('not an object' as never)).status).toBe(400);
    expect(await added('threadline.messages.refused', { 'messaging.system': 'telegram', 'error.type': 'TL_UNAUTHORIZED' })).toBe(1);
    expect(await added('threadline.messages.refused', { 'messaging.system': 'slack', 'error.type': 'TL_UNAUTHORIZED' })).toBe(1);
    expect(await added('threadline.messages.refused', { 'messaging.system': 'slack', 'error.type': 'TL_BAD_REQUEST' })).toBe(1);
    expect(await added('threadline.messages.refused')).toBe(3);
  });

  it('counts retries and dead letters, and gauges the outbox: pending, its oldest age, chats at their cap', async () => {
    const g = await start({ env: { THREADLINE_OUTBOX_MAX_PER_CHAT: '1', THREADLINE_DELIVERY_BACKOFF_MS: '60000', THREADLINE_DELIVERY_BACKOFF_MAX_MS: '60000' } });
    const added = await counting(g);
    g.receiver.failNext(1, 503);
    const sentAt = Date.now();
    await g.send({ chat_id: 'slow', text: 'x' });
    await until(async () => (await g.deliveries())[0]?.attempts === 1);
    const stuck = await g.metrics();
    expect(stuck.value('threadline.outbox.pending')).toBe(1);
    expect(stuck.value('threadline.outbox.full_chats')).toBe(1);
    const age = stuck.value('threadline.outbox.oldest_pending.age');
    expect(age).toBeGreaterThan(0);
    expect(age).toBeLessThanOrEqual((Date.now() - sentAt) / 1000 + 0.01);
    expect(await added('threadline.delivery.retries', { ...WEBHOOK, 'threadline.delivery.kind': 'reply' })).toBe(1);

    g.receiver.failNext(1, 400);
    await g.send({ chat_id: 'refusing', text: 'y' });
    await until(async () => (await added('threadline.deliveries', { 'threadline.delivery.result': 'dead_letter' })) === 1);
    expect(await added('threadline.deliveries', { ...WEBHOOK, 'threadline.delivery.kind': 'reply', 'threadline.delivery.result': 'dead_letter' })).toBe(1);
    expect(await added('threadline.deliveries', { 'threadline.delivery.result': 'sent' })).toBe(0);
    const after = await g.metrics();
    expect(after.value('threadline.outbox.pending')).toBe(1);
    expect(after.value('threadline.outbox.oldest_pending.age')).toBeGreaterThanOrEqual(age);
  });

  it('reads 0 from the outbox gauges when nothing waits', async () => {
    const g = await start();
    await g.send({ chat_id: 'a', text: 'x' });
    await until(async () => (await g.deliveries())[0]?.status === 'done');
    const now = await g.metrics();
    expect(now.value('threadline.outbox.pending')).toBe(0);
    expect(now.value('threadline.outbox.oldest_pending.age')).toBe(0);
    expect(now.value('threadline.intake.queued')).toBe(0);
  });

  it('lists every counter from the start, at 0, for each enabled platform', async () => {
    const g = await start({ telegram: true });
    const now = await g.metrics();
    const has = (name: string, attributes: Record<string, string>) =>
      now.points.some((point) => point.name === name && Object.entries(attributes).every(([key, value]) => point.attributes[key] === value));
    for (const platform of ['webhook', 'telegram']) {
      const on = { 'messaging.system': platform };
      expect(has('threadline.messages.accepted', on), platform).toBe(true);
      expect(has('threadline.messages.refused', { ...on, 'error.type': 'TL_INTAKE_FULL' }), platform).toBe(true);
      expect(has('threadline.routing.mismatches', on), platform).toBe(true);
      expect(has('threadline.delivery.retries', { ...on, 'threadline.delivery.kind': 'notification' }), platform).toBe(true);
      expect(has('threadline.deliveries', { ...on, 'threadline.delivery.kind': 'cron', 'threadline.delivery.result': 'dead_letter' }), platform).toBe(true);
    }
    for (const name of ['threadline.redis.unsuitable', 'threadline.reject_spans.dropped', 'threadline.trace_file.spans_dropped']) {
      expect(now.points.some((point) => point.name === name), name).toBe(true);
    }
  });

  it("records each reply's latency from its message's acceptance, by platform and kind", async () => {
    const slow: Agent = {
      handle: async (turn) => {
        await new Promise((resolve) => setTimeout(resolve, 300));
        await turn.reply('after a while');
      },
    };
    const g = await start({ agent: slow });
    const reply = { ...WEBHOOK, 'threadline.delivery.kind': 'reply' };
    const sumBefore = latencySum(await g.metrics(), reply);
    const added = await counting(g);
    const before = Date.now();
    await g.send({ chat_id: 'a', text: 'x' });
    await until(async () => (await added('threadline.delivery.latency', reply)) === 1);
    const latency = latencySum(await g.metrics(), reply) - sumBefore;
    // The turn's 300 ms count: the latency runs from the accept, not from the reply's creation.
    expect(latency).toBeGreaterThanOrEqual(0.3);
    expect(latency).toBeLessThanOrEqual((Date.now() - before) / 1000 + 0.01);
  });

  it('records http.server.request.duration by method, status, route template and scheme, once a request', async () => {
    const g = await start();
    const added = await counting(g);
    expect((await g.send({ chat_id: 'a', text: 'x' })).status).toBe(202);
    expect((await fetch(`${g.url}/no/such/route`)).status).toBe(404);
    expect((await fetch(`${g.url}/v1/health`, { method: 'HEAD' })).status).toBe(200);
    // A path the router cannot decode gets no route and no onResponse hook: timed all the same.
    expect((await fetch(`${g.url}/v1/%zz`)).status).toBe(400);
    const duration = 'http.server.request.duration';
    await until(async () => (await added(duration)) === 4);
    expect(await added(duration, { 'http.request.method': 'GET', 'http.response.status_code': 400 })).toBe(1);
    expect(await added(duration, { 'http.request.method': 'POST', 'http.route': '/v1/messages', 'http.response.status_code': 202, 'url.scheme': 'http' })).toBe(1);
    expect(await added(duration, { 'http.request.method': 'HEAD', 'http.route': '/v1/health', 'http.response.status_code': 200 })).toBe(1);
    const unrouted = (await g.metrics()).points.filter((point) => point.name === duration && point.attributes['http.response.status_code'] === 404);
    expect(unrouted.map((point) => [point.attributes['http.route'], point.attributes['http.request.method']])).toEqual([[undefined, 'GET']]);
    const posted = (await g.metrics()).points.find((point) => point.name === duration && point.attributes['http.request.method'] === 'POST')!;
    expect(posted.sum).toBeGreaterThan(0);
    expect(posted.sum).toBeLessThan(5);
  });

  it('gauges the intake queue: messages waiting for their turn or running', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let running = 0;
    const holding: Agent = {
      handle: async () => {
        running++;
        await released;
      },
    };
    const g = await start({ agent: holding, env: { THREADLINE_CONCURRENCY: '1' } });
    await g.send({ chat_id: 'a', text: '1' });
    await g.send({ chat_id: 'b', text: '2' });
    await g.send({ chat_id: 'c', text: '3' });
    await until(() => running === 1);
    expect((await g.metrics()).value('threadline.intake.queued')).toBe(3);
    release();
    await until(async () => (await g.metrics()).value('threadline.intake.queued') === 0);
  });
});
