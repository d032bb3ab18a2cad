import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { Mailboxes } from '../../src/queue/mailboxes.js';
import { RedisKeys } from '../../src/store/redis/redis-keys.js';
import { useRedis } from '../helpers/redis.js';

/** A mailbox has one owner at a time: the fence of every step, taken by the offer or by a drain job, dropped with the last message. */
const redis = useRedis();
const clients: Redis[] = [];
afterAll(() => {
  for (const client of clients) client.disconnect();
});

function mailboxes(): { boxes: Mailboxes; raw: Redis; keys: RedisKeys } {
  const raw = new Redis(redis.url);
  clients.push(raw);
  const keys = new RedisKeys(redis.prefix());
  return { boxes: new Mailboxes(raw, keys, 'turns'), raw, keys };
}

const lease = (token: string) => ({ token, leaseMs: 60_000 });

describe('Mailboxes: one owner a mailbox', () => {
  it('an offer with a claim owns a mailbox nobody owns and gets its head; the next offer finds it owned', async () => {
    const { boxes, raw } = mailboxes();
    expect(await boxes.offer('chat-1', 'm-1', 'one', { claim: lease('a') })).toEqual({ outcome: 'claimed', head: { id: 'm-1', data: 'one' } });
    expect(await boxes.offer('chat-1', 'm-2', 'two', { claim: lease('b') })).toEqual({ outcome: 'owned' });
    expect(await boxes.offer('chat-1', 'm-3', 'three')).toEqual({ outcome: 'owned' });
    expect(await raw.get(boxes.owner('chat-1'))).toBe('a');
    // Another mailbox, no claim: added, for a drain job to take.
    expect(await boxes.offer('chat-2', 'm-4', 'four')).toEqual({ outcome: 'added' });
    expect(await raw.exists(boxes.owner('chat-2'))).toBe(0);
  });

  it('the pop that empties the mailbox drops its owner, so the next offer claims it again', async () => {
    const { boxes, raw } = mailboxes();
    await boxes.offer('chat-1', 'm-1', 'one', { claim: lease('a') });
    await boxes.offer('chat-1', 'm-2', 'two');
    expect(await boxes.pop('chat-1', lease('a'), 'm-1')).toEqual({ fenced: false, message: { id: 'm-2', data: 'two' } });
    expect(await raw.get(boxes.owner('chat-1'))).toBe('a');
    expect(await boxes.pop('chat-1', lease('a'), 'm-2')).toEqual({ fenced: false });
    expect(await raw.exists(boxes.owner('chat-1'))).toBe(0);
    expect((await boxes.offer('chat-1', 'm-3', 'three', { claim: lease('b') })).outcome).toBe('claimed');
  });

  it('only the owner rewrites and pops; a drain job finding another owner is fenced', async () => {
    const { boxes } = mailboxes();
    await boxes.offer('chat-1', 'm-1', 'one', { claim: lease('a') });
    expect(await boxes.claim('chat-1', lease('b'))).toEqual({ fenced: true });
    expect(await boxes.rewrite('chat-1', 'b', 'm-1', 'changed')).toBe(false);
    expect(await boxes.pop('chat-1', lease('b'), 'm-1')).toEqual({ fenced: true });
    // The owner claiming again finds its head as it was.
    expect(await boxes.claim('chat-1', lease('a'))).toEqual({ fenced: false, message: { id: 'm-1', data: 'one' } });
  });

  it('a drain job claims a mailbox with no owner, and owns nothing of an empty one', async () => {
    const { boxes, raw } = mailboxes();
    await boxes.offer('chat-1', 'm-1', 'one');
    expect(await boxes.claim('chat-1', lease('job'))).toEqual({ fenced: false, message: { id: 'm-1', data: 'one' } });
    expect(await raw.get(boxes.owner('chat-1'))).toBe('job');
    expect(await boxes.claim('chat-2', lease('job'))).toEqual({ fenced: false });
    expect(await raw.exists(boxes.owner('chat-2'))).toBe(0);
  });

  it('release gives the mailbox up and answers what is left, for the drain job the releaser adds', async () => {
    const { boxes, raw } = mailboxes();
    await boxes.offer('chat-1', 'm-1', 'one', { claim: lease('a') });
    expect(await boxes.release('chat-1', 'other')).toBe(1);
    expect(await raw.get(boxes.owner('chat-1'))).toBe('a');
    expect(await boxes.release('chat-1', 'a')).toBe(1);
    expect(await raw.exists(boxes.owner('chat-1'))).toBe(0);
  });

  it('renew extends the leases still held and names those lost', async () => {
    const { boxes, raw } = mailboxes();
    await boxes.offer('chat-1', 'm-1', 'one', { claim: { token: 'a', leaseMs: 1_000 } });
    await boxes.offer('chat-2', 'm-2', 'two', { claim: { token: 'a', leaseMs: 1_000 } });
    await raw.set(boxes.owner('chat-2'), 'taken-over');
    expect(await boxes.renew([{ key: 'chat-1', token: 'a' }, { key: 'chat-2', token: 'a' }], 60_000)).toEqual(['chat-2']);
    expect(await raw.pttl(boxes.owner('chat-1'))).toBeGreaterThan(1_000);
  });

  it('the sweep passes over a mailbox with an owner, and finds one whose owner is gone', async () => {
    const { boxes, raw } = mailboxes();
    await boxes.offer('chat-1', 'm-1', 'one', { claim: lease('a') });
    const later = Date.now() + 1_000;
    expect(await boxes.stuck('turns', later)).toEqual([]);
    // The owner died: its key expired.
    await raw.del(boxes.owner('chat-1'));
    expect(await boxes.stuck('turns', Date.now() + 2_000)).toEqual(['chat-1']);
  });
});
