import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { addDrainJob } from '../../src/queue/drain-jobs.js';
import { MailboxDrains, type Drain } from '../../src/queue/mailbox-drains.js';
import { Mailboxes, type MailboxMessage } from '../../src/queue/mailboxes.js';
import { RedisKeys } from '../../src/store/redis/redis-keys.js';
import { useRedis } from '../helpers/redis.js';

/** What the turn queue and the outbox share: slots, claims, drain jobs and the drains under way. */
const redis = useRedis();
const open: Array<{ close(): Promise<unknown> } | Redis> = [];
afterEach(async () => {
  const items = open.splice(0).reverse();
  // The drains and queues first, while their connections still answer.
  for (const item of items) if (!(item instanceof Redis)) await item.close();
  for (const item of items) if (item instanceof Redis) item.disconnect();
});

function setUp(slots: number, logger = pino({ level: 'silent' }), options: { wake?: (key: string) => Promise<void>; sweepEveryMs?: number } = {}) {
  const raw = new Redis(redis.url, { maxRetriesPerRequest: null });
  open.push(raw);
  const keys = new RedisKeys(redis.prefix());
  const mailboxes = new Mailboxes(raw, keys, 'turns');
  const queue = new Queue('drains', { connection: raw, prefix: keys.queuePrefix });
  open.push(queue);
  const drains = new MailboxDrains({
    mailboxes,
    queue: 'drains',
    prefix: keys.queuePrefix,
    slots,
    wake: options.wake ?? ((key) => addDrainJob(queue, key)),
    sweepEveryMs: options.sweepEveryMs,
    logger,
    what: 'test queue',
    mailboxesAre: 'conversations',
  });
  open.push(drains);
  const worker = () => {
    const connection = new Redis(redis.url, { maxRetriesPerRequest: null });
    open.push(connection);
    return connection;
  };
  return { raw, mailboxes, queue, drains, worker };
}

/** A drain that pops every message it is given, telling `ran` of each; held at `gate` before its first pop. */
function popping(mailboxes: Mailboxes, ran: string[], gate: Promise<void> = Promise.resolve()): Drain {
  return async (key, owner, head) => {
    await gate;
    let message: MailboxMessage | undefined = head;
    while (message !== undefined) {
      ran.push(`${key}:${message.id}`);
      const next = await mailboxes.pop(key, owner, message.id);
      if (next.fenced) throw new Error('fenced');
      message = next.message;
    }
  };
}

describe('MailboxDrains', () => {
  it('claims at offer time only once started, while a slot is free, and not once stopped', async () => {
    const { drains, mailboxes, worker } = setUp(1);
    expect(drains.claim()).toBeUndefined();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const ran: string[] = [];
    await drains.start(worker(), popping(mailboxes, ran, gate));
    const claim = drains.claim()!;
    expect(claim).toBeDefined();
    // The one slot is taken: no second claim until it is given back.
    expect(drains.claim()).toBeUndefined();
    const offered = await mailboxes.offer('chat-1', 'm-1', 'one', { claim });
    expect(offered.outcome).toBe('claimed');
    drains.drainHere('chat-1', claim, (offered as { head: MailboxMessage }).head, false);
    expect(drains.claim()).toBeUndefined();
    release();
    await drains.settled();
    expect(ran).toEqual(['chat-1:m-1']);
    // The drain's end gave the slot back.
    const again = drains.claim();
    expect(again).toBeDefined();
    drains.unclaimed(again);
    drains.stop();
    expect(drains.claim()).toBeUndefined();
  });

  it('gives the slot back when a drain throws, and logs rather than rejects', async () => {
    const logger = pino({ level: 'silent' });
    const logged = vi.spyOn(logger, 'error');
    const { drains, mailboxes, worker } = setUp(1, logger);
    await drains.start(worker(), async () => {
      throw new Error('the drain broke');
    });
    const claim = drains.claim()!;
    const offered = await mailboxes.offer('chat-1', 'm-1', 'one', { claim });
    drains.drainHere('chat-1', claim, (offered as { head: MailboxMessage }).head, false);
    await drains.settled();
    expect(logged).toHaveBeenCalledTimes(1);
    const next = drains.claim();
    expect(next).toBeDefined();
    drains.unclaimed(next);
  });

  it('a drain job for a mailbox another instance owns leaves it to that one, and gives its slot back', async () => {
    const { drains, mailboxes, queue, worker } = setUp(1);
    const ran: string[] = [];
    await drains.start(worker(), popping(mailboxes, ran));
    await mailboxes.offer('chat-1', 'm-1', 'one', { claim: { token: 'another instance', leaseMs: 60_000 } });
    await addDrainJob(queue, 'chat-1');
    // Done once BullMQ holds no job: the one added was fetched, found the owner and completed.
    await vi.waitFor(
      async () => {
        expect(await queue.count()).toBe(0);
        expect(await queue.getActiveCount()).toBe(0);
      },
      { timeout: 5_000, interval: 20 },
    );
    expect(ran).toEqual([]);
    const claim = drains.claim();
    expect(claim).toBeDefined();
    drains.unclaimed(claim);
  });

  it('a sweep under way wakes no more mailboxes once stopped', async () => {
    const woken: string[] = [];
    let entered!: () => void;
    const firstWake = new Promise<void>((resolve) => (entered = resolve));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let secondWoken!: () => void;
    const second = new Promise<void>((resolve) => (secondWoken = resolve));
    const { drains, mailboxes, worker } = setUp(1, undefined, {
      sweepEveryMs: 20,
      wake: async (key) => {
        woken.push(key);
        if (woken.length === 1) {
          entered();
          await gate;
        } else secondWoken();
      },
    });
    // Offered with no drain job, as by producers that died between their push and their add: the sweep finds both.
    await mailboxes.offer('chat-1', 'm-1', 'one');
    await mailboxes.offer('chat-2', 'm-2', 'two');
    await drains.start(worker(), async () => {});
    await firstWake;
    drains.stop();
    release();
    // Were it to go on, the second wake would come within a few commands.
    const outcome = await Promise.race([second.then(() => 'woken'), new Promise((resolve) => setTimeout(() => resolve('not woken'), 1_000))]);
    expect(outcome).toBe('not woken');
    expect(woken).toHaveLength(1);
  });

  it('a drain job claims a mailbox nobody owns and drains it; release leaves what is left to the next job', async () => {
    const { drains, mailboxes, queue, worker } = setUp(2);
    await mailboxes.offer('chat-1', 'm-1', 'one');
    await mailboxes.offer('chat-1', 'm-2', 'two');
    const ran: string[] = [];
    const fromJob: boolean[] = [];
    let released = false;
    let finished!: () => void;
    const done = new Promise<void>((resolve) => (finished = resolve));
    await drains.start(worker(), async (key, owner, head, maybeFinished) => {
      fromJob.push(maybeFinished);
      if (!released) {
        // Given up after a look at its head: it all waits for the drain job release adds.
        released = true;
        await drains.release(key, owner);
        return;
      }
      await popping(mailboxes, ran)(key, owner, head, maybeFinished);
      finished();
    });
    await addDrainJob(queue, 'chat-1');
    await done;
    await drains.settled();
    expect(ran).toEqual(['chat-1:m-1', 'chat-1:m-2']);
    // Both drains came by a drain job: their first head may be one a dead owner finished.
    expect(fromJob).toEqual([true, true]);
  });
});
