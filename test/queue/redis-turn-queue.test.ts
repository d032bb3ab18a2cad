import { ROOT_CONTEXT, SpanKind, propagation, trace } from '@opentelemetry/api';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { SpanStatusCode } from '@opentelemetry/api';
import { afterEach, describe, expect, it } from 'vitest';
import { ThreadlineError } from '../../src/errors.js';
import { RedisTurnQueue, type RedisTurnQueueOptions } from '../../src/queue/redis-turn-queue.js';
import { inboundJobId } from '../../src/queue/inbound-job-id.js';
import { jobContextOf, PRODUCER_LINK } from '../../src/queue/job-context.js';
import { partitionOf } from '../../src/queue/partition.js';
import {
  captureRouting,
  contextWithSession,
  createSession,
  extractSession,
  names,
  requireSession,
  SESSION_CARRIER_FIELD,
  sessionIdOfKey,
  sessionKey,
  withSessionId,
  type SessionInput,
} from '../../src/session/index.js';
import { RedisKeys } from '../../src/store/redis/redis-keys.js';
import type { RunTurn, TurnJob } from '../../src/gateway/turn-queue.js';
import { startRedisServer, useRedis } from '../helpers/redis.js';
import { useGlobalTracing } from '../helpers/tracing.js';

const redis = useRedis();
const tracing = useGlobalTracing();

/** Everything a test opened: closed after it, whatever it asserted. */
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** What a test's turns saw: each turn as it started, by instance. */
interface Seen {
  readonly instance: string;
  readonly job: TurnJob;
  readonly signal: AbortSignal;
}

/**
 * A run function for instance `instance` that records each turn and ends its span (as the
 * gateway's does). `hold(job)` returning a promise keeps that turn running until it settles.
 */
function recorder(seen: Seen[], instance: string, hold?: (job: TurnJob, signal: AbortSignal) => Promise<void> | undefined): RunTurn {
  return async (job, signal) => {
    seen.push({ instance, job, signal });
    notify();
    try {
      await hold?.(job, signal);
    } finally {
      job.span.end();
    }
  };
}

/** Waiters on `seen`, woken each time a turn starts: the deterministic signal tests wait on. */
let waiters: (() => void)[] = [];
function notify(): void {
  for (const wake of waiters.splice(0)) wake();
}
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise<void>((resolve) => waiters.push(resolve));
}

/** A resolvable promise. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

interface Instance {
  readonly queue: RedisTurnQueue;
  /** Drops every connection of this instance without a word to Redis: a process killed with -9. */
  kill(): void;
}

/** A gateway instance's turn queue, with connections of its own, closed after the test. */
function instance(prefix: string, options: Partial<RedisTurnQueueOptions> = {}, log?: string[], url = redis.url): Instance {
  const opened: Redis[] = [];
  const connection = (): Redis => {
    const client = new Redis(url, { maxRetriesPerRequest: null });
    // BullMQ duplicates the worker connection for its blocking fetch: tracked, so kill() drops it too.
    const duplicate = client.duplicate.bind(client);
    client.duplicate = (...args: Parameters<Redis['duplicate']>) => {
      const copy = duplicate(...args);
      opened.push(copy);
      return copy;
    };
    client.on('error', () => undefined);
    opened.push(client);
    return client;
  };
  const logger = pino({ level: log === undefined ? 'silent' : 'warn' }, { write: (line: string) => void log?.push(line) });
  const queue = new RedisTurnQueue({ connection, keys: new RedisKeys(prefix), partitions: 4, work: true, logger, ...options });
  cleanups.push(async () => {
    await queue.close('the test is over');
    for (const client of opened) client.disconnect();
  });
  return {
    queue,
    kill: () => {
      for (const client of opened) {
        client.on('error', () => undefined);
        client.disconnect();
      }
    },
  };
}

/** A raw BullMQ queue on the same inbound partition, for writing job data by hand. */
function rawInboundQueue(prefix: string, index: number): Queue {
  const keys = new RedisKeys(prefix);
  const connection = new Redis(redis.url, { maxRetriesPerRequest: null });
  const queue = new Queue(keys.inboundQueue(index), { connection, prefix: keys.queuePrefix });
  cleanups.push(async () => {
    await queue.close();
    connection.disconnect();
  });
  return queue;
}

const tracer = trace.getTracer('threadline-test');

/** A chat's session as the gateway builds it, and its key. */
function sessionOf(chatId: string, changes: Partial<SessionInput> = {}) {
  const routing = createSession({ platform: 'telegram', chatType: 'group', chatId, threadId: '7', userId: 'u-1', ...changes });
  const key = sessionKey({ platform: routing.platform, chatType: routing.chatType, chatId: routing.chatId, threadId: routing.threadId, userId: undefined });
  return { session: withSessionId(routing, sessionIdOfKey(key, 0)), key };
}

/** A message as the gateway offers it: session entered, gateway.message span active. */
function turnJob(chatId: string, id: string, text = `text of ${id}`): TurnJob {
  const { session, key } = sessionOf(chatId);
  const entered = contextWithSession(ROOT_CONTEXT, session);
  const span = tracer.startSpan('gateway.message', { kind: SpanKind.SERVER }, entered);
  const context = trace.setSpan(entered, span);
  return { id, sessionId: session.sessionId, session, key, text, context, span, routing: captureRouting(context) };
}

/** The messages of each session in the order its turns ran. */
function orderBySession(seen: readonly Seen[]): Map<string, string[]> {
  const order = new Map<string, string[]>();
  for (const { job } of seen) order.set(job.session.chatId, [...(order.get(job.session.chatId) ?? []), job.id]);
  return order;
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
    // While a held turn blocks its partition, the others go on: the chats must not all share one.
    expect(new Set(chats.map((chat) => partitionOf(sessionOf(chat).key, 4))).size).toBeGreaterThan(1);
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
    const partition = `inbound-${partitionOf(job.key, 4)}`;
    expect(message.attributes['messaging.destination.name']).toBe(partition);
    expect(turn.kind).toBe(SpanKind.CONSUMER);
    expect(turn.spanContext().traceId).toBe(message.spanContext().traceId);
    expect(turn.parentSpanContext?.spanId).toBe(message.spanContext().spanId);
    expect(turn.attributes).toMatchObject({
      'messaging.system': 'threadline',
      'messaging.operation.type': 'process',
      'messaging.destination.name': partition,
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
    await rawInboundQueue(prefix, partitionOf(real.key, 4)).add(
      'turn',
      { id: 'm-1', key: real.key, text: 'hello', context: { routing: real.routing, carrier } },
      { jobId: inboundJobId('m-1') },
    );
    await until(() => seen.length === 1);

    const ran = seen[0]!.job;
    expect(ran.session.chatId).toBe('chat-real');
    expect(ran.sessionId).toBe(real.sessionId);
    expect(requireSession(ran.context).chatId).toBe('chat-real');
    expect(propagation.getBaggage(ran.context)?.getEntry(names.CHAT_ID)?.value).toBe('chat-real');
    // The naive consumer, which resumes whatever the carrier says, is caught: this job would misroute it.
    expect(requireSession(extractSession(carrier)).chatId).toBe('chat-evil');
  });

  it('leaves a job it cannot use failed, says so without its text, and goes on with the partition', async () => {
    const prefix = redis.prefix();
    const seen: Seen[] = [];
    const log: string[] = [];
    const a = instance(prefix, {}, log);
    const good = turnJob('chat-1', 'm-good');
    const partition = partitionOf(good.key, 4);
    const raw = rawInboundQueue(prefix, partition);
    await raw.add('turn', { id: 'm-bad', key: good.key, text: 'SECRET TEXT', context: { routing: { v: 2 }, carrier: {} } }, { jobId: 'm-bad' });
    await raw.add('turn', { id: 'm-worse' }, { jobId: 'm-worse' });
    await a.queue.offer(good);
    await a.queue.start(recorder(seen, 'a'));
    await until(() => seen.length === 1);

    expect(seen[0]!.job.id).toBe('m-good');
    expect(await raw.getJobState('m-bad')).toBe('failed');
    expect(await raw.getJobState('m-worse')).toBe('failed');
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
    await a.queue.idle();
    expect(seen.map(({ job }) => job.id)).toEqual(['m-1', 'm-2']);
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

  it('a turn whose instance died runs again on the other instance, first in its partition', async () => {
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
    await raw.del(`${new RedisKeys(prefix).queuePrefix}:${new RedisKeys(prefix).inboundQueue(partitionOf(job.key, 4))}:${inboundJobId('m-1')}:lock`);
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
});
