import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { addDrainJob } from '../../src/queue/drain-jobs.js';
import { MailboxDrains, type Drain } from '../../src/queue/mailbox-drains.js';
import { Mailboxes, type MailboxMessage } from '../../src/queue/mailboxes.js';
import { RedisKeys } from '../../src/store/redis/redis-keys.js';
import { useRedis } from '../helpers/redis.js';

/** What the turn queue and the outbox share: slots, claims, drain jobs and the drains under way. */
const redis = useRedis();
const open: Array<{ close(): Promise<unknown> } | Redis> = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) {
    if (item instanceof Redis) item.disconnect();
    else await item.close();
  }
});

function setUp(slots: number) {
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
    wake: (key) => addDrainJob(queue, key),
    logger: pino({ level: 'silent' }),
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
    const { drains, mailboxes, worker } = setUp(1);
    await drains.start(worker(), async () => {
      throw new Error('the drain broke');
    });
    const claim = drains.claim()!;
    const offered = await mailboxes.offer('chat-1', 'm-1', 'one', { claim });
    drains.drainHere('chat-1', claim, (offered as { head: MailboxMessage }).head, false);
    await drains.settled();
    const next = drains.claim();
    expect(next).toBeDefined();
    drains.unclaimed(next);
  });

  it('a drain job claims a mailbox nobody owns and drains it; release leaves what is left to the next job', async () => {
    const { drains, mailboxes, queue, worker } = setUp(2);
    await mailboxes.offer('chat-1', 'm-1', 'one');
    await mailboxes.offer('chat-1', 'm-2', 'two');
    const ran: string[] = [];
    const fromJob: boolean[] = [];
    let released = false;
    const done = new Promise<void>((resolve) => {
      void drains.start(worker(), async (key, owner, head, maybeFinished) => {
        fromJob.push(maybeFinished);
        if (!released) {
          // Given up after a look at its head: it all waits for the drain job release adds.
          released = true;
          await drains.release(key, owner);
          return;
        }
        await popping(mailboxes, ran)(key, owner, head, maybeFinished);
        resolve();
      });
    });
    await addDrainJob(queue, 'chat-1');
    await done;
    await drains.settled();
    expect(ran).toEqual(['chat-1:m-1', 'chat-1:m-2']);
    // Both drains came by a drain job: their first head may be one a dead owner finished.
    expect(fromJob).toEqual([true, true]);
  });
});
