import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisKeys } from '../../src/store/redis/redis-keys.js';
import { partitionOf } from '../../src/queue/partition.js';
import type { TurnJob } from '../../src/gateway/turn-queue.js';
import { startRedisServer, useRedis } from '../helpers/redis.js';
import { gate, orderBySession, recorder, RunningTurns, sessionOf, turnJob, turnQueueInstance, until, type Seen } from './redis-turn-queue-support.js';

/** The conversation is the unit of order: every conversation at once, each one turn at a time. */
const redis = useRedis();

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** `condition` within `ms`, else a failure that says what was awaited (the partitioned queue would wait forever). */
async function within(ms: number, what: string, condition: () => boolean): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`not within ${ms} ms: ${what}`)), ms)));
  try {
    await Promise.race([until(condition), late]);
  } finally {
    clearTimeout(timer);
  }
}

function instance(prefix: string, concurrency: number, options: Parameters<typeof turnQueueInstance>[3] = {}, log?: string[]) {
  return turnQueueInstance(redis.url, prefix, cleanups, { concurrency, ...options }, log);
}

/** Resolves when `signal` aborts. */
function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

describe('RedisTurnQueue: the conversation is the unit of order', () => {
  it('runs as many turns at once as the instances have slots: 2 instances × 8 run 16 conversations together', async () => {
    const prefix = redis.prefix();
    const seen: Seen[] = [];
    const running = new RunningTurns();
    const release = gate();
    cleanups.push(async () => release.open());
    // Held until released, or aborted by close() when the test fails first.
    const hold = (job: TurnJob, signal: AbortSignal) => {
      const leave = running.enter(job);
      return Promise.race([release.promise, aborted(signal)]).then(leave);
    };
    const a = instance(prefix, 8);
    const b = instance(prefix, 8);
    await a.queue.start(recorder(seen, 'a', hold));
    await b.queue.start(recorder(seen, 'b', hold));
    for (let chat = 0; chat < 16; chat++) await (chat % 2 === 0 ? a : b).queue.offer(turnJob(`chat-${chat}`, `c${chat}:m0`));

    await within(5_000, '16 turns running at once', () => running.now === 16);
    expect(running.maxAtOnce).toBe(16);
    expect(new Set(seen.map((turn) => turn.instance))).toEqual(new Set(['a', 'b']));
    release.open();
    await within(5_000, 'every turn returned', () => running.now === 0);
    expect(running.overlaps).toEqual([]);
  });

  it("a slow turn holds up only its own conversation, even one that hashed to its partition", async () => {
    const prefix = redis.prefix();
    const seen: Seen[] = [];
    const running = new RunningTurns();
    const slow = gate();
    cleanups.push(async () => slow.open());
    const hold = (job: TurnJob, signal: AbortSignal) => {
      const leave = running.enter(job);
      return (job.id === 'slow:m0' ? Promise.race([slow.promise, aborted(signal)]) : Promise.resolve()).then(leave);
    };
    // Quick conversations that shared the slow one's partition among the old default 16.
    const slowKey = sessionOf('slow').key;
    const quick = Array.from({ length: 200 }, (_, n) => `quick-${n}`)
      .filter((chat) => partitionOf(sessionOf(chat).key, 16) === partitionOf(slowKey, 16))
      .slice(0, 4);
    expect(quick.length).toBe(4);
    const a = instance(prefix, 4);
    const b = instance(prefix, 4);
    await a.queue.start(recorder(seen, 'a', hold));
    await b.queue.start(recorder(seen, 'b', hold));
    await a.queue.offer(turnJob('slow', 'slow:m0'));
    await b.queue.offer(turnJob('slow', 'slow:m1'));
    await within(5_000, 'the slow turn started', () => seen.some((turn) => turn.job.id === 'slow:m0'));
    for (const [n, chat] of quick.entries()) {
      for (let m = 0; m < 3; m++) await (n % 2 === 0 ? a : b).queue.offer(turnJob(chat, `${chat}:m${m}`));
    }

    await within(5_000, 'every quick turn ran beside the slow one', () => quick.every((chat) => seen.some((turn) => turn.job.id === `${chat}:m2`)));
    // The slow conversation's next message waits for its turn: order within it holds.
    expect(seen.some((turn) => turn.job.id === 'slow:m1')).toBe(false);
    slow.open();
    await within(5_000, "the slow conversation's next turn ran", () => seen.some((turn) => turn.job.id === 'slow:m1'));
    expect(running.overlaps).toEqual([]);
  });

  it('three instances under mixed turns: each conversation in order, never two of its turns at once', async () => {
    const prefix = redis.prefix();
    const seen: Seen[] = [];
    const running = new RunningTurns();
    // Some turns return at once, some after a few event-loop rounds, some after a short timer: mixed lengths.
    const hold = async (job: TurnJob) => {
      const leave = running.enter(job);
      const n = Number(job.id.split(':m')[1]);
      if (n % 3 === 1) for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
      if (n % 3 === 2) await new Promise<void>((resolve) => setTimeout(resolve, 5));
      leave();
    };
    const instances = [instance(prefix, 3), instance(prefix, 3), instance(prefix, 3)];
    for (const [n, one] of instances.entries()) await one.queue.start(recorder(seen, `i${n}`, hold));
    const offered = new Map<string, string[]>();
    const chats = Array.from({ length: 12 }, (_, n) => `chat-${n}`);
    for (let m = 0; m < 8; m++) {
      await Promise.all(
        chats.map(async (chat, n) => {
          const id = `${chat}:m${m}`;
          offered.set(chat, [...(offered.get(chat) ?? []), id]);
          await instances[(n + m) % 3]!.queue.offer(turnJob(chat, id));
        }),
      );
    }
    await within(10_000, 'every turn ran', () => seen.length >= 96 && running.now === 0);

    expect(orderBySession(seen)).toEqual(offered);
    expect(running.overlaps).toEqual([]);
    expect(new Set(seen.map((turn) => turn.instance)).size).toBeGreaterThan(1);
  });

  it("an instance killed mid-turn: each of its conversations' turns runs again elsewhere, before their later messages", async () => {
    const prefix = redis.prefix();
    const seen: Seen[] = [];
    const running = new RunningTurns();
    // Short locks, checked often by both: BullMQ throttles the stalled check by the last checker's interval.
    const quickStalls = { lockDurationMs: 1_000, stalledIntervalMs: 200, retryDelayMs: 100 };
    const a = instance(prefix, 4, quickStalls);
    const b = instance(prefix, 4, quickStalls);
    const never = gate();
    cleanups.push(async () => never.open());
    // A's turns never end (its process is about to die); B's end at once.
    await a.queue.start(recorder(seen, 'a', (job) => {
      running.enter(job);
      return never.promise;
    }));
    const chats = ['chat-1', 'chat-2', 'chat-3'];
    for (const chat of chats) await a.queue.offer(turnJob(chat, `${chat}:m0`));
    await within(5_000, "A runs each conversation's first turn", () => seen.length === 3);
    for (const chat of chats) await b.queue.offer(turnJob(chat, `${chat}:m1`));
    await b.queue.start(recorder(seen, 'b'));

    a.kill();
    await within(10_000, 'B ran every turn again and the later ones', () => seen.length === 9);

    for (const chat of chats) {
      expect(seen.filter((turn) => turn.job.session.chatId === chat).map(({ instance, job }) => `${instance}:${job.id}`)).toEqual([
        `a:${chat}:m0`,
        `b:${chat}:m0`,
        `b:${chat}:m1`,
      ]);
    }
  });

  it('an instance with a free slot runs the turn it took at once, with no drain job in BullMQ', async () => {
    const prefix = redis.prefix();
    const seen: Seen[] = [];
    // More slots than conversations: however slowly the turns end, each offer finds one free.
    const a = instance(prefix, 4);
    const b = instance(prefix, 4);
    await a.queue.start(recorder(seen, 'a'));
    await b.queue.start(recorder(seen, 'b'));
    for (const chat of ['chat-1', 'chat-2', 'chat-3']) await a.queue.offer(turnJob(chat, `${chat}:m0`));
    await within(5_000, 'every turn ran', () => seen.length === 3);
    expect(seen.every((turn) => turn.instance === 'a')).toBe(true);
    const raw = new Redis(redis.url);
    cleanups.push(async () => raw.disconnect());
    const keys = new RedisKeys(prefix);
    // BullMQ numbers every job it adds in `<queue>:id`: no job, no counter.
    expect(await raw.exists(`${keys.queuePrefix}:${keys.turnsQueue}:id`)).toBe(0);
  });

  it('with every slot here busy, a message goes to a drain job that an instance with a free slot takes', async () => {
    const prefix = redis.prefix();
    const seen: Seen[] = [];
    const held = gate();
    const a = instance(prefix, 1);
    const b = instance(prefix, 1);
    // Opened before the instances close (cleanups run last first): a close waits for its turns.
    cleanups.push(async () => held.open());
    await a.queue.start(recorder(seen, 'a', () => held.promise));
    await a.queue.offer(turnJob('chat-1', 'm-1'));
    await within(5_000, "A runs chat-1's turn", () => seen.length === 1);
    await b.queue.start(recorder(seen, 'b'));
    await a.queue.offer(turnJob('chat-2', 'm-2'));
    await within(5_000, 'B ran the turn A had no slot for', () => seen.length === 2);
    expect(seen.map(({ instance, job }) => `${instance}:${job.id}`)).toEqual(['a:m-1', 'b:m-2']);
  });

  it('an offer given up on while Redis stalled, which lands after all, leaves no owner behind: its turn runs', async () => {
    // A server of its own: the test pauses its writes.
    const server = await startRedisServer();
    cleanups.push(() => server.stop());
    const seen: Seen[] = [];
    const a = turnQueueInstance(server.url, redis.prefix(), cleanups, { concurrency: 2, commandTimeoutMs: 100 });
    await a.queue.start(recorder(seen, 'a'));
    const pauser = new Redis(server.url);
    cleanups.push(async () => pauser.disconnect());
    // Writes wait 400 ms: the offer is refused after 100 ms, and its script runs (and claims the mailbox) after that.
    await pauser.client('PAUSE', 400, 'WRITE');
    await expect(a.queue.offer(turnJob('chat-1', 'm-1'))).rejects.toMatchObject({ code: 'TL_REDIS_UNAVAILABLE' });
    // Without the release, the claim would hold the conversation for nobody until its lease lapsed (30 s).
    await within(5_000, 'the message whose offer was refused ran once it landed', () => seen.length === 1);
    expect(seen[0]!.job.id).toBe('m-1');
  });

  it("the fence: a drain job whose lock another instance holds now runs no further turn of its conversation", async () => {
    const prefix = redis.prefix();
    const seen: Seen[] = [];
    const log: string[] = [];
    const a = instance(prefix, 2, { lockDurationMs: 400 }, log);
    await a.queue.start(recorder(seen, 'a', (_job, signal) => aborted(signal)));
    await a.queue.offer(turnJob('chat-1', 'm-1'));
    await a.queue.offer(turnJob('chat-1', 'm-2'));
    await within(5_000, 'the first turn started', () => seen.length === 1);
    // What a takeover looks like from here: the conversation's owner key holds another instance's token.
    const raw = new Redis(redis.url);
    cleanups.push(async () => raw.disconnect());
    const [owner] = await raw.keys(new RedisKeys(prefix).key('turns', 'owner', '*'));
    await raw.set(owner!, 'another-instance', 'PX', 60_000);

    // The renewal finds the lock taken and aborts the turn; the drain then stops at its fence.
    await within(10_000, 'the drain stopped at its fence, or went past it', () => seen.length > 1 || log.some((line) => line.includes('a drain job lost its lock')));
    expect(seen.map(({ job }) => job.id)).toEqual(['m-1']);
    expect(seen[0]!.signal.aborted).toBe(true);
  });
});
