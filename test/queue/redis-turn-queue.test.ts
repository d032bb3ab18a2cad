import { SpanKind, SpanStatusCode, propagation, trace } from '@opentelemetry/api';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { ThreadlineError } from '../../src/errors.js';
import type { RedisTurnQueueOptions } from '../../src/queue/redis-turn-queue.js';
import { jobContextOf, PRODUCER_LINK } from '../../src/queue/job-context.js';
import { TurnMailboxes } from '../../src/queue/turn-mailboxes.js';
import { extractSession, names, requireSession, SESSION_CARRIER_FIELD } from '../../src/session/index.js';
import { RedisKeys } from '../../src/store/redis/redis-keys.js';
import type { TurnJob } from '../../src/gateway/turn-queue.js';
import { startRedisServer, useRedis } from '../helpers/redis.js';
import { useGlobalTracing } from '../helpers/tracing.js';
import { gate, orderBySession, recorder, sessionOf, turnJob, turnQueueInstance, until, type Seen } from './redis-turn-queue-support.js';

const redis = useRedis();
const tracing = useGlobalTracing();

/** Everything a test opened: closed after it, whatever it asserted. */
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function instance(prefix: string, options: Partial<RedisTurnQueueOptions> = {}, log?: string[], url = redis.url) {
  return turnQueueInstance(url, prefix, cleanups, options, log);
}

/** A raw connection, for writing a mailbox by hand. */
function raw(): Redis {
  const connection = new Redis(redis.url, { maxRetriesPerRequest: null });
  cleanups.push(async () => connection.disconnect());
  return connection;
}

describe('RedisTurnQueue', () => {
  it("keeps each session's order across two instances that both run turns, one turn of a session at a time", async () => {
    const prefix = redis.prefix();
    const seen: Seen[] = [];
    const release = gate();
    const runningChats = new Set<string>();
    const overlaps: string[] = [];
    /** Holds A's tenth turn, so A is still at work when it stops taking jobs and B starts. */
    const hold = (job: TurnJob): Promise<void> | undefined => {
      if (runningChats.has(job.session.chatId)) overlaps.push(job.id);
      runningChats.add(job.session.chatId);
      const held = seen.filter((turn) => turn.instance === 'a').length === 10 && seen.at(-1)!.job === job;
      const done = (): void => void runningChats.delete(job.session.chatId);
      if (!held) return new Promise<void>((resolve) => setImmediate(resolve)).then(done);
      return release.promise.then(done);
    };
    const a = instance(prefix);
    const b = instance(prefix);
    await a.queue.start(recorder(seen, 'a', hold));
    const offered = new Map<string, string[]>();
    const chats = ['chat-1', 'chat-2', 'chat-3'];
    for (let index = 0; index < 20; index++) {
      for (const [n, chat] of chats.entries()) {
        const id = `${chat}:m${index}`;
        offered.set(chat, [...(offered.get(chat) ?? []), id]);
        // Alternately through both instances: any instance accepts.
        await ((index * chats.length + n) % 2 === 0 ? a : b).queue.offer(turnJob(chat, id));
      }
    }
    await until(() => seen.filter((turn) => turn.instance === 'a').length >= 10);
    await b.queue.start(recorder(seen, 'b', hold));
    const idle = a.queue.idle();
    // B may take the held session's next message only once A's turn of it has returned.
    await until(() => seen.length >= 13);
    release.open();
    await idle;
    const ranBeforeIdle = seen.length;
    await until(() => seen.length === 60);
    await b.queue.idle();

    expect(orderBySession(seen)).toEqual(offered);
    expect(overlaps).toEqual([]);
    expect(seen.filter((turn) => turn.instance === 'a').length).toBeGreaterThanOrEqual(10);
    expect(seen.slice(ranBeforeIdle).every((turn) => turn.instance === 'b')).toBe(true);
    expect(seen.slice(ranBeforeIdle).length).toBeGreaterThan(0);
    expect(a.queue.size + b.queue.size).toBe(0);
  });

  it('runs the turn in a consumer span that is a child of the message span and links to origin and producer', async () => {
    const prefix = redis.prefix();
    const seen: Seen[] = [];
    const a = instance(prefix);
    await a.queue.start(recorder(seen, 'a'));
    const job = turnJob('chat-1', 'msg/1:x');
    await a.queue.offer(job);
    await until(() => seen.length === 1);
    await until(() => tracing.spans().some((span) => span.name === 'gateway.turn'));

    const message = tracing.span('gateway.message');
    const turn = tracing.span('gateway.turn');
    expect(message.attributes['messaging.destination.name']).toBe('turns');
    expect(turn.kind).toBe(SpanKind.CONSUMER);
    expect(turn.spanContext().traceId).toBe(message.spanContext().traceId);
    expect(turn.parentSpanContext?.spanId).toBe(message.spanContext().spanId);
    expect(turn.attributes).toMatchObject({
      'messaging.system': 'threadline',
      'messaging.operation.type': 'process',
      'messaging.destination.name': 'turns',
      'messaging.message.id': 'msg/1:x',
    });
    const links = turn.links.map((link) => [link.attributes?.['threadline.link'], link.context.spanId]);
    expect(links).toEqual([
      ['origin', message.spanContext().spanId],
      [PRODUCER_LINK, message.spanContext().spanId],
    ]);
    // The turn runs in its own span, with the routing it was accepted under.
    const ran = seen[0]!.job;
    expect(trace.getSpan(ran.context)).toBe(ran.span);
    expect(ran).toMatchObject({ id: 'msg/1:x', key: job.key, text: job.text, sessionId: job.sessionId, routing: job.routing });
  });

  it("takes the session from the job's routing snapshot, never from the carrier's baggage or session field", async () => {
    const prefix = redis.prefix();
    const seen: Seen[] = [];
    const a = instance(prefix);
    await a.queue.start(recorder(seen, 'a'));
    const real = turnJob('chat-real', 'm-1');
    const forged = jobContextOf(turnJob('chat-evil', 'm-2').context).carrier;
    const evil = sessionOf('chat-evil').session;
    const carrier = {
      ...forged,
      baggage: `${names.CHAT_ID}=chat-evil,${names.SESSION_ID}=${evil.sessionId}`,
      [SESSION_CARRIER_FIELD]: Buffer.from(JSON.stringify(evil)).toString('base64url'),
    };
    // Pushed by hand into the mailbox; the next offer of the conversation wakes its drain job.
    const data = { id: 'm-1', key: real.key, text: 'hello', context: { routing: real.routing, carrier } };
    await new TurnMailboxes(raw(), new RedisKeys(prefix)).offer(real.key, 'm-1', JSON.stringify(data));
    await a.queue.offer(turnJob('chat-real', 'm-2'));
    await until(() => seen.length === 1);

    const ran = seen[0]!.job;
    expect(ran.session.chatId).toBe('chat-real');
    expect(ran.sessionId).toBe(real.sessionId);
    expect(requireSession(ran.context).chatId).toBe('chat-real');
    expect(propagation.getBaggage(ran.context)?.getEntry(names.CHAT_ID)?.value).toBe('chat-real');
    // The naive consumer, which resumes whatever the carrier says, is caught: this job would misroute it.
    expect(requireSession(extractSession(carrier)).chatId).toBe('chat-evil');
  });

  it('keeps a message it cannot use aside, says so without its text, and goes on with its conversation', async () => {
    const prefix = redis.prefix();
    const seen: Seen[] = [];
    const log: string[] = [];
    const a = instance(prefix, {}, log);
    const good = turnJob('chat-1', 'm-good');
    const connection = raw();
    const mailboxes = new TurnMailboxes(connection, new RedisKeys(prefix));
    await mailboxes.offer(good.key, 'm-bad', JSON.stringify({ id: 'm-bad', key: good.key, text: 'SECRET TEXT', context: { routing: { v: 2 }, carrier: {} } }));
    await mailboxes.offer(good.key, 'm-worse', JSON.stringify({ id: 'm-worse' }));
    await mailboxes.offer(good.key, 'm-junk', 'SECRET TEXT, not JSON');
    await a.queue.offer(good);
    await a.queue.start(recorder(seen, 'a'));
    await until(() => seen.length === 1);

    expect(seen[0]!.job.id).toBe('m-good');
    expect((await connection.hkeys(mailboxes.unusable)).sort()).toEqual(['m-bad', 'm-junk', 'm-worse']);
    expect(await connection.llen(mailboxes.mailbox(good.key))).toBe(0);
    const lines = log.join('\n');
    expect(lines).toContain('m-bad');
    expect(lines).toContain('m-worse');
    expect(lines).not.toContain('SECRET TEXT');
  });

  it('a replayed offer of a message still queued adds nothing', async () => {
    const prefix = redis.prefix();
    const seen: Seen[] = [];
    const a = instance(prefix);
    await a.queue.offer(turnJob('chat-1', 'm-1'));
    await a.queue.offer(turnJob('chat-1', 'm-1'));
    await a.queue.offer(turnJob('chat-1', 'm-2'));
    await a.queue.start(recorder(seen, 'a'));
    await until(() => seen.length === 2);
    expect(seen.map(({ job }) => job.id)).toEqual(['m-1', 'm-2']);
    // Replayed once it ran (a start's replay racing the end of its turn): nothing again.
    await a.queue.offer(turnJob('chat-1', 'm-1'));
    await a.queue.offer(turnJob('chat-1', 'm-3'));
    await until(() => seen.length === 3);
    expect(seen.map(({ job }) => job.id)).toEqual(['m-1', 'm-2', 'm-3']);
  });

  it('a message pushed by a producer that died before it added the drain job runs at the next sweep', async () => {
    const prefix = redis.prefix();
    const seen: Seen[] = [];
    const a = instance(prefix, { sweepEveryMs: 100 });
    const job = turnJob('chat-1', 'm-1');
    const data = { id: 'm-1', key: job.key, text: 'hello', context: jobContextOf(job.context, job.routing) };
    await new TurnMailboxes(raw(), new RedisKeys(prefix)).offer(job.key, 'm-1', JSON.stringify(data));
    await a.queue.start(recorder(seen, 'a'));
    await until(() => seen.length === 1);
    expect(seen[0]!.job.id).toBe('m-1');
  });

  it('once idle, takes no more turns: what comes next runs on another instance', async () => {
    const prefix = redis.prefix();
    const seen: Seen[] = [];
    const a = instance(prefix);
    const b = instance(prefix);
    await a.queue.start(recorder(seen, 'a'));
    await a.queue.idle();
    await a.queue.offer(turnJob('chat-1', 'm-1'));
    await b.queue.start(recorder(seen, 'b'));
    await until(() => seen.length === 1);
    expect(seen.map(({ instance, job }) => `${instance}:${job.id}`)).toEqual(['b:m-1']);
  });

  it('a turn aborted at close runs again on the other instance before the next message of its session', async () => {
    const prefix = redis.prefix();
    const seen: Seen[] = [];
    const a = instance(prefix);
    const b = instance(prefix);
    // A's turns run until aborted.
    await a.queue.start(recorder(seen, 'a', (_job, signal) => new Promise((resolve) => signal.addEventListener('abort', () => resolve()))));
    await a.queue.offer(turnJob('chat-1', 'm-1'));
    await b.queue.offer(turnJob('chat-1', 'm-2'));
    await until(() => seen.length === 1);
    await b.queue.start(recorder(seen, 'b'));
    expect(a.queue.size).toBe(1);

    await a.queue.close('the gateway is stopping');
    await until(() => seen.length === 3);

    expect(seen.map(({ instance, job }) => `${instance}:${job.id}`)).toEqual(['a:m-1', 'b:m-1', 'b:m-2']);
    expect(seen[0]!.signal.aborted).toBe(true);
    expect(a.queue.size).toBe(0);
  });

  it('a turn whose instance died runs again on the other instance, first in its conversation', async () => {
    const prefix = redis.prefix();
    const seen: Seen[] = [];
    // Every instance checks for stalls as often: BullMQ throttles the check by the last checker's interval.
    // The dead instance's workers retry their lost connection quickly, so closing them at the end is quick.
    const quickStalls = { lockDurationMs: 1_000, stalledIntervalMs: 200, retryDelayMs: 100 };
    const a = instance(prefix, quickStalls);
    const b = instance(prefix, quickStalls);
    const never = gate();
    cleanups.push(async () => never.open());
    await a.queue.start(recorder(seen, 'a', () => never.promise));
    await a.queue.offer(turnJob('chat-1', 'm-1'));
    await b.queue.offer(turnJob('chat-1', 'm-2'));
    await until(() => seen.length === 1);
    await b.queue.start(recorder(seen, 'b'));

    a.kill();
    await until(() => seen.length === 3);

    expect(seen.map(({ instance, job }) => `${instance}:${job.id}`)).toEqual(['a:m-1', 'b:m-1', 'b:m-2']);
  });

  it('aborts a turn whose lock lapsed (cut off from Redis past the lease), since another instance runs it then', async () => {
    const prefix = redis.prefix();
    const seen: Seen[] = [];
    const log: string[] = [];
    const a = instance(prefix, { lockDurationMs: 400 }, log);
    const untilAborted = (_job: TurnJob, signal: AbortSignal) => new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
    await a.queue.start(recorder(seen, 'a', untilAborted));
    const job = turnJob('chat-1', 'm-1');
    await a.queue.offer(job);
    await until(() => seen.length === 1);
    const aborted = new Promise<void>((resolve) => seen[0]!.signal.addEventListener('abort', () => resolve()));
    // What a lapse looks like to the lock's next renewal: the lock is gone.
    const raw = new Redis(redis.url);
    cleanups.push(async () => raw.disconnect());
    const owners = await raw.keys(new RedisKeys(prefix).key('turns', 'owner', '*'));
    expect(owners.length).toBe(1);
    await raw.del(owners[0]!);
    await aborted;
    expect((seen[0]!.signal.reason as Error).message).toMatch(/lost its lock/);
    expect(log.join('\n')).toContain('lost its lock');
  });

  it('/stop aborts a turn running on another instance', async () => {
    const prefix = redis.prefix();
    const seen: Seen[] = [];
    const a = instance(prefix);
    const b = instance(prefix);
    const untilAborted = (_job: TurnJob, signal: AbortSignal) => new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
    await a.queue.start(recorder(seen, 'a', untilAborted));
    await b.queue.start(recorder(seen, 'b', untilAborted));
    const job = turnJob('chat-1', 'm-1');
    await a.queue.offer(job);
    await until(() => seen.length === 1);
    const ranOn = seen[0]!;
    const aborted = new Promise<void>((resolve) => ranOn.signal.addEventListener('abort', () => resolve()));

    const other = ranOn.instance === 'a' ? b : a;
    expect(await other.queue.abort(job.sessionId, 'stopped by /stop')).toBe(false);
    await aborted;
    expect((ranOn.signal.reason as Error).message).toBe('stopped by /stop');
  });

  it('/stop of a turn running here aborts it and says so', async () => {
    const prefix = redis.prefix();
    const seen: Seen[] = [];
    const a = instance(prefix);
    await a.queue.start(recorder(seen, 'a', (_job, signal) => new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()))));
    const job = turnJob('chat-1', 'm-1');
    await a.queue.offer(job);
    await until(() => seen.length === 1);
    expect(await a.queue.abort(sessionOf('chat-2').session.sessionId, 'stopped by /stop')).toBe(false);
    expect(seen[0]!.signal.aborted).toBe(false);
    expect(await a.queue.abort(job.sessionId, 'stopped by /stop')).toBe(true);
    expect(seen[0]!.signal.aborted).toBe(true);
  });

  it('an offer Redis does not take is refused as TL_REDIS_UNAVAILABLE, its span ended with the error', async () => {
    const server = await startRedisServer();
    const a = instance(redis.prefix(), { commandTimeoutMs: 300 }, undefined, server.url);
    await a.queue.offer(turnJob('chat-1', 'm-1'));
    await server.stop();
    const job = turnJob('chat-1', 'm-2');

    const refused = await a.queue.offer(job).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ThreadlineError);
    expect((refused as ThreadlineError).code).toBe('TL_REDIS_UNAVAILABLE');
    expect(a.queue.size).toBe(0);
    const span = tracing.spans().find((ended) => ended.spanContext().spanId === job.span.spanContext().spanId);
    expect(span?.status.code).toBe(SpanStatusCode.ERROR);
    await server.restart();
  });

  it("moves what an earlier version left in its inbound partitions into mailboxes, once, in each conversation's order", async () => {
    const prefix = redis.prefix();
    const keys = new RedisKeys(prefix);
    const connection = raw();
    const seen: Seen[] = [];
    // The partitioned layout: chat-1's job taken by an instance that died (active), two more waiting; chat-2 and a damaged job in another partition.
    const partition = (index: number): Queue => {
      const queue = new Queue(keys.legacyInboundQueue(index), { connection, prefix: keys.queuePrefix });
      cleanups.push(async () => queue.close());
      return queue;
    };
    const dataOf = (chat: string, id: string) => {
      const job = turnJob(chat, id);
      job.span.end();
      return { id, key: job.key, text: `text of ${id}`, context: jobContextOf(job.context, job.routing) };
    };
    const [zero, one] = [partition(0), partition(1)];
    await zero.add('turn', dataOf('chat-1', 'm-1'), { jobId: 'm-m-1' });
    await connection.lmove(`${keys.queuePrefix}:inbound-0:wait`, `${keys.queuePrefix}:inbound-0:active`, 'RIGHT', 'LEFT');
    await zero.add('turn', dataOf('chat-1', 'm-2'), { jobId: 'm-m-2' });
    await zero.add('turn', dataOf('chat-1', 'm-3'), { jobId: 'm-m-3' });
    await one.add('turn', dataOf('chat-2', 'm-4'), { jobId: 'm-m-4' });
    await one.add('turn', { id: 'm-bad' }, { jobId: 'm-m-bad' });

    // Two instances start at once: each message moves once.
    const a = instance(prefix, { legacyPartitions: 4 });
    const b = instance(prefix, { legacyPartitions: 4 });
    await Promise.all([a.queue.start(recorder(seen, 'a')), b.queue.start(recorder(seen, 'b'))]);
    await until(() => seen.length === 4);

    expect(orderBySession(seen)).toEqual(new Map([['chat-1', ['m-1', 'm-2', 'm-3']], ['chat-2', ['m-4']]]));
    expect(await connection.exists(`${keys.queuePrefix}:inbound-0:meta`, `${keys.queuePrefix}:inbound-1:meta`, `${keys.queuePrefix}:inbound-0:wait`)).toBe(0);
    expect(await connection.hkeys(keys.key('turns', 'unusable'))).toEqual(['m-m-bad']);
    // A later start finds nothing left to move.
    const c = instance(prefix, { legacyPartitions: 4 });
    await c.queue.start(recorder(seen, 'c'));
    await a.queue.idle();
    await b.queue.idle();
    await c.queue.idle();
    expect(seen.length).toBe(4);
  });
});
