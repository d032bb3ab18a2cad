import { ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api';
import { afterEach, describe, expect, it } from 'vitest';
import { formatDestination } from '../../src/session/delivery.js';
import { contextWithSession, createSession } from '../../src/session/index.js';
import { RedisKeys } from '../../src/store/redis/redis-keys.js';
import { threadlineTracer } from '../../src/telemetry/tracer.js';
import { until } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';
import { useGlobalTracing } from '../helpers/tracing.js';
import { FakePlatform, delivery, instance, refused, unavailable, type Instance, type InstanceOptions } from './redis-outbox-support.js';

const redis = useRedis();
const tracing = useGlobalTracing();
const opened: Instance[] = [];

afterEach(async () => {
  for (const each of opened.splice(0).reverse()) await each.close();
});

function open(options: Omit<InstanceOptions, 'url'>): Instance {
  const made = instance({ url: redis.url, ...options });
  opened.push(made);
  return made;
}

/** The open counters as Redis holds them: total and per destination. */
async function counters(of: Instance, prefix: string): Promise<{ total: string | null; perChat: Record<string, string> }> {
  const keys = new RedisKeys(prefix);
  return { total: await of.redis.get(keys.openDeliveriesTotal), perChat: await of.redis.hgetall(keys.openDeliveries) };
}

describe('RedisOutbox: order and retries', () => {
  it('keeps each chat in order while its first deliveries fail and are retried inside the job', async () => {
    const prefix = redis.prefix();
    const platform = new FakePlatform();
    platform.answer = (message, attempt) => ((message.id === 'a1' && attempt <= 2) || (message.id === 'a3' && attempt === 1) ? unavailable() : undefined);
    const a = open({ prefix, platform });
    for (const id of ['a1', 'a2', 'a3', 'a4']) expect(await a.records.add(delivery(id, 'A'))).toBe('queued');
    for (const id of ['b1', 'b2']) await a.records.add(delivery(id, 'B'));
    expect((await a.records.pressure(2)).open).toBe(6);
    expect((await a.records.pressure(2)).fullDestinations).toBe(2);
    await a.outbox.start();
    await until(() => platform.sentTo('A').length === 4 && platform.sentTo('B').length === 2);
    expect(platform.sentTo('A')).toEqual(['a1', 'a2', 'a3', 'a4']);
    expect(platform.sentTo('B')).toEqual(['b1', 'b2']);
    await until(() => a.outbox.stats().delivered === 6);
    expect(a.outbox.stats()).toEqual({ delivered: 6, retried: 3, failed: 0 });
    await until(async () => (await a.records.pressure(1)).open === 0);
    expect(await counters(a, prefix)).toEqual({ total: null, perChat: {} });
    const listed = await a.records.list({ limit: 10, chatId: 'A' });
    expect(listed.map((record) => [record.id, record.status])).toEqual(
      expect.arrayContaining([['a1', 'done'], ['a2', 'done'], ['a3', 'done'], ['a4', 'done']]),
    );
    expect(listed.find((record) => record.id === 'a1')!.attempts).toBe(2);
  });

  it('carries the live message a delivery replaces to the platform and the listing', async () => {
    const prefix = redis.prefix();
    const platform = new FakePlatform();
    const a = open({ prefix, platform });
    expect(await a.records.add({ ...delivery('live', 'A'), replaces: '1042' })).toBe('queued');
    await a.outbox.start();
    await until(() => platform.sentTo('A').length === 1);
    expect(platform.seen[0]!.message.replaces).toBe('1042');
    expect((await a.records.list({ limit: 1 }))[0]!.replaces).toBe('1042');
  });

  it('answers exists for a second add of one id, and sends it once', async () => {
    const prefix = redis.prefix();
    const platform = new FakePlatform();
    const a = open({ prefix, platform });
    // Ids may hold ':' and '/', which BullMQ refuses in its own ids.
    expect(await a.records.add(delivery('turn:1/reply', 'A'))).toBe('queued');
    expect(await a.records.add(delivery('turn:1/reply', 'A'))).toBe('exists');
    expect((await a.records.pressure(5)).open).toBe(1);
    await a.outbox.start();
    await until(() => platform.sentTo('A').length === 1);
    await until(async () => (await a.records.states(['turn:1/reply'])).get('turn:1/reply') === 'done');
    expect(await a.records.add(delivery('turn:1/reply', 'A'))).toBe('exists');
    expect((await a.records.pressure(5)).open).toBe(0);
    expect(await a.records.states(['turn:1/reply', 'never'])).toEqual(new Map([['turn:1/reply', 'done']]));
    // The open-then-exists add re-queued nothing: one job in all.
    expect((await a.records.list({ limit: 10 })).map((record) => record.id)).toEqual(['turn:1/reply']);
  });

  it('recovers an add cut off between its marker and its mailbox: the next add queues it', async () => {
    const prefix = redis.prefix();
    const platform = new FakePlatform();
    const a = open({ prefix, platform });
    await a.records.add(delivery('lost', 'A'));
    // As if the add stopped after its marker: neither the mailbox nor its data hold the delivery.
    await a.redis.del(a.records.mailboxes.mailbox(formatDestination(delivery('lost', 'A').destination)), new RedisKeys(prefix).key('outbox', 'messages'));
    expect(await a.records.add(delivery('lost', 'A'))).toBe('exists');
    await a.outbox.start();
    await until(() => platform.sentTo('A').length === 1);
    await until(async () => (await a.records.pressure(1)).open === 0);
  });
});

describe('RedisOutbox: two instances', () => {
  it('share the destinations: every delivery sent once, each chat in order, never two sends to a chat at once', async () => {
    const prefix = redis.prefix();
    const platform = new FakePlatform();
    platform.delayMs = 5;
    platform.answer = (message, attempt) => (message.id.endsWith('-0') && attempt === 1 ? unavailable() : undefined);
    const a = open({ prefix, platform, name: 'a' });
    const b = open({ prefix, platform, name: 'b' });
    const chats = ['c1', 'c2', 'c3', 'c4'];
    // A chat's deliveries one after another in the queue: two workers running at once would take two of one chat.
    for (const chat of chats) {
      for (let n = 0; n < 6; n++) await (n % 2 === 0 ? a : b).records.add(delivery(`${chat}-${n}`, chat));
    }
    await Promise.all([a.outbox.start(), b.outbox.start()]);
    await until(() => chats.every((chat) => platform.sentTo(chat).length === 6));
    for (const chat of chats) expect(platform.sentTo(chat)).toEqual([0, 1, 2, 3, 4, 5].map((n) => `${chat}-${n}`));
    expect(platform.maxInFlightPerChat).toBe(1);
    // Each counts its sends once they are recorded done, just after the platform saw them.
    await until(() => a.outbox.stats().delivered + b.outbox.stats().delivered === 24);
    await until(async () => (await a.records.pressure(1)).open === 0);
    expect(await counters(a, prefix)).toEqual({ total: null, perChat: {} });
  });

  it('an instance that stops mid-send hands the drain job back to the front: the other sends it first, attempts kept', async () => {
    const prefix = redis.prefix();
    const platform = new FakePlatform();
    platform.answer = (message, attempt) => (message.id === 'x1' && attempt === 1 ? 'hang' : undefined);
    const a = open({ prefix, platform, name: 'a' });
    await a.records.add(delivery('x1', 'X'));
    await a.records.add(delivery('x2', 'X'));
    await a.outbox.start();
    await until(async () => (await a.records.states(['x1'])).get('x1') === 'sending');
    await a.outbox.stop(Date.now() + 50);
    expect(platform.sentTo('X')).toEqual([]);
    expect(await a.records.states(['x1', 'x2'])).toEqual(new Map([['x1', 'pending'], ['x2', 'pending']]));
    expect((await a.records.list({ limit: 5, failedOnly: true })).length).toBe(0);
    const b = open({ prefix, platform, name: 'b' });
    await b.outbox.start();
    await until(() => platform.sentTo('X').length === 2);
    expect(platform.sentTo('X')).toEqual(['x1', 'x2']);
    expect(platform.seen.filter((send) => send.ok).map((send) => send.instance)).toEqual(['b', 'b']);
  });
});

describe('RedisOutbox: dead letters', () => {
  it('gives up a refused delivery: kept failed with its reason, counters closed; a retry sends it and the chat goes on', async () => {
    const prefix = redis.prefix();
    const platform = new FakePlatform();
    let refusing = true;
    platform.answer = (message) => (message.id === 'r1' && refusing ? refused() : undefined);
    const a = open({ prefix, platform });
    await a.records.add(delivery('r1', 'R'));
    await a.records.add(delivery('r2', 'R'));
    await a.outbox.start();
    await until(() => platform.sentTo('R').length === 1);
    expect(platform.sentTo('R')).toEqual(['r2']);
    const [dead] = await a.records.list({ limit: 5, failedOnly: true });
    expect(dead).toMatchObject({ id: 'r1', status: 'failed', attempts: 1, lastError: 'webhook answered 400 (refused)' });
    expect(dead!.finishedAt).toBeGreaterThanOrEqual(dead!.createdAt);
    await until(() => a.outbox.stats().delivered === 1);
    expect(a.outbox.stats()).toMatchObject({ delivered: 1, failed: 1 });
    await until(async () => (await a.records.pressure(1)).open === 0);
    expect(await counters(a, prefix)).toEqual({ total: null, perChat: {} });
    expect((await a.records.overdue({ before: Date.now() + 1, limit: 10 })).map((state) => [state.id, state.status])).toEqual([['r1', 'failed']]);

    refusing = false;
    expect(await a.records.retryFailed('nope')).toBe(0);
    expect(await a.records.retryFailed('r1')).toBe(1);
    await until(() => platform.sentTo('R').length === 2);
    expect(platform.sentTo('R')).toEqual(['r2', 'r1']);
    await until(async () => (await a.records.states(['r1'])).get('r1') === 'done');
    expect((await a.records.pressure(1)).open).toBe(0);
    expect(await a.records.retryFailed(undefined)).toBe(0);
  });

  it('keeps a delivery the misroute guard refused as a dead letter, never sent; a retry by hand sends it', async () => {
    const prefix = redis.prefix();
    const platform = new FakePlatform();
    const a = open({ prefix, platform });
    await a.outbox.refuse(delivery('m1', 'M'), 'Refused a delivery to webhook:M: the work began in webhook:N', trace.getTracer('test').startSpan('deliver'));
    await a.records.add(delivery('m2', 'M'));
    await a.outbox.start();
    await until(() => platform.sentTo('M').length === 1);
    expect(platform.sentTo('M')).toEqual(['m2']);
    const [dead] = await a.records.list({ limit: 5, failedOnly: true });
    expect(dead).toMatchObject({ id: 'm1', status: 'failed', attempts: 0, lastError: 'Refused a delivery to webhook:M: the work began in webhook:N' });
    await until(async () => (await a.records.pressure(1)).open === 0);
    expect(a.outbox.stats()).toMatchObject({ delivered: 1, failed: 1 });
    expect(await a.records.retryFailed('m1')).toBe(1);
    await until(() => platform.sentTo('M').length === 2);
    expect(platform.sentTo('M')).toEqual(['m2', 'm1']);
  });

  it('gives up out of attempts, and retries every dead letter with --all-failed', async () => {
    const prefix = redis.prefix();
    const platform = new FakePlatform();
    let failing = true;
    platform.answer = () => (failing ? unavailable() : undefined);
    const a = open({ prefix, platform, maxAttempts: 2 });
    await a.records.add(delivery('o1', 'O'));
    await a.records.add(delivery('p1', 'P'));
    await a.outbox.start();
    await until(async () => (await a.records.list({ limit: 5, failedOnly: true })).length === 2);
    const dead = await a.records.list({ limit: 5, failedOnly: true });
    expect(dead.every((record) => record.attempts === 2 && record.lastError === 'webhook answered 503 (out of attempts)')).toBe(true);
    expect(a.outbox.stats()).toEqual({ delivered: 0, retried: 2, failed: 2 });
    failing = false;
    expect(await a.records.retryFailed(undefined)).toBe(2);
    await until(() => platform.sentTo('O').length === 1 && platform.sentTo('P').length === 1);
    await until(async () => (await a.records.pressure(1)).open === 0);
    expect(await counters(a, prefix)).toEqual({ total: null, perChat: {} });
  });

  it('keeps a damaged delivery aside as unusable instead of crashing the worker; its destination goes on', async () => {
    const prefix = redis.prefix();
    const platform = new FakePlatform();
    const a = open({ prefix, platform });
    const key = formatDestination(delivery('after', 'A').destination);
    await a.records.mailboxes.offer(key, 'dbroken', JSON.stringify({ id: 'broken' }));
    await a.records.add(delivery('after', 'A'));
    await a.outbox.start();
    await until(() => platform.sentTo('A').length === 1);
    expect(await a.redis.hgetall(a.records.mailboxes.unusable)).toEqual({ dbroken: JSON.stringify({ id: 'broken' }) });
    await until(() => a.outbox.stats().delivered === 1);
    expect(a.outbox.stats()).toMatchObject({ delivered: 1, failed: 1 });
  });
});

describe('RedisOutbox: context across the queue', () => {
  it("sends in a consumer span whose parent is the router's span, in the session of the snapshot", async () => {
    const prefix = redis.prefix();
    const platform = new FakePlatform();
    const a = open({ prefix, platform });
    const session = createSession({ platform: 'webhook', chatType: 'dm', chatId: 'S', sessionId: 'tl_s' });
    const producer = await threadlineTracer().startActiveSpan('gateway.deliver', {}, contextWithSession(ROOT_CONTEXT, session), async (span) => {
      // The work began elsewhere (a turn's message span): the consumer links there, and to its producer.
      const origin = { ...delivery('s1', 'S').origin, origin: { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: 1 } };
      await a.outbox.send({ ...delivery('s1', 'S'), origin }, span);
      span.end();
      return span;
    });
    expect(tracing.span('gateway.deliver').attributes).toMatchObject({ 'delivery.queued': true, 'messaging.destination.name': 'deliveries' });
    await a.outbox.start();
    await until(() => platform.sentTo('S').length === 1);
    await until(() => tracing.spans().filter((span) => span.name === 'gateway.deliver').length === 2);
    const consumer = tracing.spans().find((span) => span.kind === SpanKind.CONSUMER)!;
    expect(consumer.spanContext().traceId).toBe(producer.spanContext().traceId);
    expect(consumer.parentSpanContext?.spanId).toBe(producer.spanContext().spanId);
    expect(consumer.links.map((link) => [link.attributes?.['threadline.link'], link.context.spanId])).toEqual([
      ['origin', 'b'.repeat(16)],
      ['producer', producer.spanContext().spanId],
    ]);
    expect(consumer.attributes).toMatchObject({ 'delivery.id': 's1', 'delivery.attempt': 1, 'routing.destination.chat.id': 'S' });
    // The delivery's own origin routing, not whatever session produced the job.
    expect(platform.seen[0]!.session).toMatchObject({ chatId: 'S', sessionId: 'tl_S' });
    expect(trace.getActiveSpan()).toBeUndefined();
  });

  it('records a replayed delivery as such on the span', async () => {
    const platform = new FakePlatform();
    const a = open({ prefix: redis.prefix(), platform, work: false });
    await a.records.add(delivery('twice', 'T'));
    const span = threadlineTracer().startSpan('gateway.deliver');
    await a.outbox.send(delivery('twice', 'T'), span);
    span.end();
    expect(tracing.span('gateway.deliver').attributes['delivery.replayed']).toBe(true);
  });
});
