import { SpanStatusCode } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import type { Agent, Turn } from '../../src/agent/agent.js';
import { captureRouting, type RoutingSnapshot } from '../../src/session/index.js';
import type { TestGateway } from '../../src/testing/index.js';
import { until, useGatewayWith, webhookOrigin } from '../helpers/gateway.js';

const start = useGatewayWith();

describe('messaging semantic conventions', () => {
  it('marks gateway.message as a receive and every gateway.deliver, a retried one too, as a send of its platform', async () => {
    const g = await start();
    g.receiver.failNext(1, 503);
    const answer = await g.send({ chat_id: 'c', text: 'x' });
    const traceId = answer.body['trace_id'] as string;
    await g.receiver.waitFor(1);
    const spans = await g.waitForSpans(traceId, ['gateway.message', 'gateway.deliver']);
    expect(spans.find((span) => span.name === 'gateway.message')!.attributes).toMatchObject({
      'messaging.system': 'webhook',
      'messaging.operation.type': 'receive',
    });
    expect(spans.find((span) => span.name === 'gateway.deliver')!.attributes).toMatchObject({
      'messaging.system': 'webhook',
      'messaging.operation.type': 'send',
    });
    await until(() => g.telemetry.spans().some((span) => span.name === 'gateway.deliver' && span.links[0]?.context.traceId === traceId));
    const retried = g.telemetry.spans().find((span) => span.name === 'gateway.deliver' && span.links[0]?.context.traceId === traceId)!;
    expect(retried.attributes).toMatchObject({ 'messaging.system': 'webhook', 'messaging.operation.type': 'send' });
  });
});

describe('delivery retries', () => {
  it('retries 5xx and 429 (honouring Retry-After) until delivered, once per idempotency key', async () => {
    const g = await start();
    g.receiver.failNext(2, 503);
    g.receiver.failNext(1, 429, '0');
    await g.send({ chat_id: 'c', text: 'persistent' });
    const [delivery] = await g.receiver.waitFor(1);
    expect(delivery!.body.text).toBe('persistent');
    await until(async () => (await g.running.gateway.health()).outbox.open === 0);
    expect(g.receiver.received).toHaveLength(1);
    expect(g.running.gateway.outbox.stats()).toMatchObject({ delivered: 1, retried: 3, failed: 0 });
  });

  it('gives up on a 4xx other than 429 and keeps the delivery as failed', async () => {
    const g = await start();
    g.receiver.failNext(1, 400);
    const answer = await g.send({ chat_id: 'c', text: 'refused' });
    const spans = await g.waitForSpans(answer.body['trace_id'] as string, ['gateway.message']);
    const deliver = spans.find((span) => span.name === 'gateway.deliver')!;
    expect(deliver.status.code).toBe(SpanStatusCode.ERROR);
    expect(g.running.gateway.outbox.stats()).toMatchObject({ delivered: 0, failed: 1 });
    expect((await g.running.gateway.health()).outbox.open).toBe(0);
  });

  it('stops after the configured number of attempts', async () => {
    const g = await start({ THREADLINE_DELIVERY_MAX_ATTEMPTS: '3' });
    g.receiver.failEvery(503);
    await g.send({ chat_id: 'c', text: 'doomed' });
    await until(() => g.running.gateway.outbox.stats().failed === 1);
    expect(g.running.gateway.outbox.stats().retried).toBe(2);
  });

  it('takes a Retry-After of a day as THREADLINE_DELIVERY_MAX_RETRY_AFTER_MS (an hour), so one answer cannot hold a chat for days', async () => {
    const g = await start();
    g.receiver.failNext(1, 429, String(24 * 3600));
    await g.send({ chat_id: 'c', text: 'throttled' });
    await until(async () => (await g.deliveries())[0]?.attempts === 1);
    const [record] = await g.deliveries();
    expect(record).toMatchObject({ status: 'pending', attempts: 1 });
    expect(record!.dueAt - Date.now()).toBeGreaterThan(3_600_000 - 5_000);
    expect(record!.dueAt - Date.now()).toBeLessThanOrEqual(3_600_000);
  });

  it('gives up after THREADLINE_DELIVERY_GIVE_UP_MS however few attempts it had, and lets the chat go on', async () => {
    const g = await start({ THREADLINE_DELIVERY_GIVE_UP_MS: '400', THREADLINE_DELIVERY_MAX_ATTEMPTS: '1000' });
    g.receiver.failNext(2, 503, '3600');
    await g.send({ chat_id: 'c', text: 'doomed' });
    await until(async () => (await g.deliveries({ failedOnly: true })).length === 1);
    const [record] = await g.deliveries({ failedOnly: true });
    // The hour-long Retry-After is not waited for: the last attempt is made at the give-up time.
    expect(record!.attempts).toBe(2);
    expect(record!.lastError).toContain('past its give-up time');
    expect(record!.finishedAt! - record!.attemptsSince).toBeGreaterThanOrEqual(400);
    await g.send({ chat_id: 'c', text: 'next' });
    expect((await g.receiver.waitFor(1)).map((d) => d.body.text)).toEqual(['next']);
  });

  it('refuses an explicit destination the store could not read back (an empty thread id)', async () => {
    const g = await start();
    const delivery = {
      id: 'bad/1',
      kind: 'send' as const,
      text: 'x',
      target: { to: 'explicit' as const, destination: { platform: 'webhook', chatId: 'a', threadId: '' } },
      origin: webhookOrigin('a', 's'),
    };
    await expect(g.running.gateway.router.deliver(delivery)).rejects.toMatchObject({ code: 'TL_TARGET_INVALID' });
    expect(await g.deliveries()).toEqual([]);
  });

  it('resumes a retried delivery in its origin routing, in a trace linked to the message', async () => {
    const g = await start();
    g.receiver.failNext(1, 503);
    const answer = await g.send({ chat_id: 'origin-chat', thread_id: 'th', text: 'x' });
    await g.receiver.waitFor(1);
    const traceId = answer.body['trace_id'] as string;
    await until(() =>
      g.telemetry.spans().some((span) => span.name === 'gateway.deliver' && span.links[0]?.context.traceId === traceId),
    );
    const retried = g.telemetry.spans().find((span) => span.name === 'gateway.deliver' && span.links[0]?.context.traceId === traceId)!;
    expect(retried.spanContext().traceId).not.toBe(traceId);
    expect(retried.attributes).toMatchObject({ 'chat.id': 'origin-chat', 'chat.thread.id': 'th', 'delivery.attempt': 2 });
  });
});

describe('misroute guard', () => {
  /** An agent that, while handling chat B, delivers work that began in chat A: a context mix-up. */
  function mixingAgent(): Agent & { gateway?: TestGateway } {
    let first: RoutingSnapshot | undefined;
    const agent: Agent & { gateway?: TestGateway } = {
      handle: async (turn) => {
        if (first === undefined) {
          first = captureRouting();
          return turn.reply('first');
        }
        await agent.gateway!.running.gateway.router.deliver({ id: `mixed-${turn.messageId}`, kind: 'notification', text: 'for A', origin: first });
      },
    };
    return agent;
  }

  it('lenient (THREADLINE_STRICT_ROUTING=0): flags a delivery whose destination differs from its origin: ERROR span, event, counter', async () => {
    const agent = mixingAgent();
    const g = await start({ THREADLINE_STRICT_ROUTING: '0' }, agent);
    agent.gateway = g;
    const mismatchesBefore = (await g.metrics()).value('threadline.routing.mismatches', { 'messaging.system': 'webhook' });
    await g.send({ chat_id: 'A', thread_id: '1', text: 'a' });
    await g.receiver.waitFor(1);
    const answer = await g.send({ chat_id: 'B', text: 'b' });
    const spans = await g.waitForSpans(answer.body['trace_id'] as string, ['gateway.message']);
    const deliver = spans.find((span) => span.name === 'gateway.deliver')!;
    expect(deliver.status.code).toBe(SpanStatusCode.ERROR);
    const event = deliver.events.find((e) => e.name === 'routing.mismatch')!;
    expect(event.attributes).toEqual({
      'routing.origin.platform': 'webhook',
      'routing.origin.chat.id': 'A',
      'routing.origin.chat.thread.id': '1',
      'routing.destination.platform': 'webhook',
      'routing.destination.chat.id': 'B',
      'routing.destination.chat.thread.id': '',
    });
    expect(g.running.gateway.router.mismatches()).toBe(1);
    expect((await g.metrics()).value('threadline.routing.mismatches', { 'messaging.system': 'webhook' }) - mismatchesBefore).toBe(1);
  });

  it('refuses such a delivery by default: a dead letter with its reason, never sent', async () => {
    const agent = mixingAgent();
    const g = await start({}, agent);
    agent.gateway = g;
    const deadLetters = async () => (await g.metrics()).value('threadline.deliveries', { 'messaging.system': 'webhook', 'threadline.delivery.result': 'dead_letter' });
    const deadBefore = await deadLetters();
    await g.send({ chat_id: 'A', text: 'a' });
    await g.receiver.waitFor(1);
    const answer = await g.send({ chat_id: 'B', text: 'b' });
    await g.waitForSpans(answer.body['trace_id'] as string, ['gateway.message']);
    // The turn failed on the refusal; the gateway answered B with an apology, never with A's text.
    const texts = (await g.receiver.waitFor(2)).map((delivery) => [delivery.body.chat_id, delivery.body.text]);
    expect(texts).toEqual([['A', 'first'], ['B', expect.stringContaining('Sorry')]]);
    expect(g.running.gateway.router.mismatches()).toBe(1);
    const [dead] = await g.running.store.outbox.list({ failedOnly: true, limit: 10 });
    expect(dead).toMatchObject({ id: expect.stringMatching(/^mixed-/), status: 'failed', text: 'for A', destination: { chatId: 'B' } });
    expect(dead!.lastError).toMatch(/TL_MISROUTE_REFUSED|began in webhook:A/);
    expect((await deadLetters()) - deadBefore).toBe(1);
  });
});

describe('a turn answers its own chat', () => {
  /** Keeps chat A's turn and answers it while handling chat B's message: B's context is active then. */
  function parkingAgent(): Agent {
    let parked: Turn | undefined;
    return {
      handle: async (turn) => {
        if (parked === undefined) {
          parked = turn;
          return;
        }
        await parked.reply('answer for A');
        await turn.reply('answer for B');
      },
    };
  }

  it.each([['strict (default)', {}], ['lenient', { THREADLINE_STRICT_ROUTING: '0' }]])(
    'a kept turn replies to its own chat and thread from inside another message, %s',
    async (_, env) => {
      const g = await start(env, parkingAgent());
      await g.send({ chat_id: 'A', thread_id: 'a-thread', text: 'a' });
      await until(async () => (await g.running.store.messages.pending()).length === 0);
      await g.send({ chat_id: 'B', text: 'b' });
      const received = (await g.receiver.waitFor(2)).map((delivery) => [delivery.body.chat_id, delivery.body.thread_id ?? null, delivery.body.text]);
      expect(received).toEqual(
        expect.arrayContaining([
          ['A', 'a-thread', 'answer for A'],
          ['B', null, 'answer for B'],
        ]),
      );
      expect(g.running.gateway.router.mismatches()).toBe(0);
    },
  );
});
