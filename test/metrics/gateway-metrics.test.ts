import type { Attributes } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import type { Agent } from '../../src/agent/agent.js';
import type { TestGateway } from '../../src/testing/index.js';
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
