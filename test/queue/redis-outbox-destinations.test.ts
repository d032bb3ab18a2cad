import { afterEach, describe, expect, it, vi } from 'vitest';
import { DeliveryError } from '../../src/errors.js';
import { until } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';
import { FakePlatform, delivery, instance, type Instance, type InstanceOptions } from './redis-outbox-support.js';

const redis = useRedis();
const opened: Instance[] = [];
const releases: (() => void)[] = [];

afterEach(async () => {
  for (const release of releases.splice(0)) release();
  for (const each of opened.splice(0).reverse()) await each.close();
});

function open(options: Omit<InstanceOptions, 'url'>): Instance {
  const made = instance({ url: redis.url, ...options });
  opened.push(made);
  return made;
}

/** A promise held until released (also at the end of the test, so nothing is left hanging). */
function held(): { promise: Promise<void>; release: () => void } {
  let release: () => void = () => undefined;
  const promise = new Promise<void>((resolve) => (release = resolve));
  releases.push(release);
  return { promise, release };
}

/** `until` for a test that must not wait out a fixed sleep: fails with `what` after `ms`. */
async function within<T>(ms: number, what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`not within ${ms} ms: ${what}`)), ms)));
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

// `held-0` and `quick-2` hash to one partition of 16 (and so of 4): the partitioned outbox sent them one after the other.
describe('RedisOutbox: the destination is the unit of order', () => {
  it('a platform call held for one destination does not delay another destination', async () => {
    const prefix = redis.prefix();
    const platform = new FakePlatform();
    const slow = held();
    platform.gate = (message) => (message.destination.chatId === 'held-0' ? slow.promise : undefined);
    const a = open({ prefix, platform, name: 'a', slots: 2 });
    const b = open({ prefix, platform, name: 'b', slots: 2 });
    await a.records.add(delivery('h1', 'held-0'));
    await a.records.add(delivery('h2', 'held-0'));
    await Promise.all([a.outbox.start(), b.outbox.start()]);
    await within(5_000, "held-0's first send under way", platform.when(() => platform.inFlightTotal === 1));
    await b.records.add(delivery('q1', 'quick-2'));
    // The held call is released only once the other destination's delivery went out.
    await within(5_000, 'quick-2 sent while held-0 is held', platform.when(() => platform.sentTo('quick-2').length === 1));
    expect(platform.sentTo('held-0')).toEqual([]);
    slow.release();
    await within(5_000, "held-0's deliveries sent, in order", platform.when(() => platform.sentTo('held-0').length === 2));
    expect(platform.sentTo('held-0')).toEqual(['h1', 'h2']);
    expect(platform.maxInFlightPerChat).toBe(1);
  });

  it('sends for as many destinations at once as the instances have slots, never two to one destination, each in order', async () => {
    const prefix = redis.prefix();
    const platform = new FakePlatform();
    const everyone = held();
    // Every send waits until the cluster has its 20 slots busy: more than the 16 partitions of old, so only without them.
    platform.gate = () => everyone.promise;
    void platform.when(() => platform.inFlightTotal === 20).then(everyone.release);
    const a = open({ prefix, platform, name: 'a', slots: 10 });
    const b = open({ prefix, platform, name: 'b', slots: 10 });
    const chats = Array.from({ length: 30 }, (_, index) => `chat-${index}`);
    for (let n = 0; n < 2; n++) for (const chat of chats) await (n % 2 === 0 ? a : b).records.add(delivery(`${chat}:${n}`, chat));
    await Promise.all([a.outbox.start(), b.outbox.start()]);
    await within(5_000, 'twenty sends at once across the two instances', platform.when(() => platform.maxInFlightTotal === 20));
    await within(5_000, 'every delivery sent', platform.when(() => chats.every((chat) => platform.sentTo(chat).length === 2)));
    for (const chat of chats) expect(platform.sentTo(chat)).toEqual([0, 1].map((n) => `${chat}:${n}`));
    expect(platform.maxInFlightPerChat).toBe(1);
    // Bounded by the slots: ten an instance.
    expect(platform.maxInFlightTotal).toBe(20);
    expect(new Set(platform.seen.map((send) => send.instance))).toEqual(new Set(['a', 'b']));
  });

  it("a Retry-After frees the slot while it runs: another destination is sent meanwhile, then the waiting one in order", async () => {
    const prefix = redis.prefix();
    const platform = new FakePlatform();
    platform.answer = (message, attempt) =>
      message.id === 'r1' && attempt === 1 ? new DeliveryError('webhook answered 429', { retryable: true, retryAfterMs: 1_500 }) : undefined;
    // One slot: waited out in the slot, the Retry-After would hold the other destination too.
    const a = open({ prefix, platform, slots: 1, maxRetryAfterMs: 5_000 });
    await a.records.add(delivery('r1', 'R'));
    await a.records.add(delivery('r2', 'R'));
    await a.outbox.start();
    await within(5_000, "r1's first attempt refused", platform.when(() => platform.seen.length === 1));
    await a.records.add(delivery('q1', 'Q'));
    await within(1_000, 'q1 sent while R waits out its Retry-After', platform.when(() => platform.sentTo('Q').length === 1));
    expect(platform.sentTo('R')).toEqual([]);
    await within(5_000, "R's deliveries sent after the wait, in order", platform.when(() => platform.sentTo('R').length === 2));
    expect(platform.sentTo('R')).toEqual(['r1', 'r2']);
    // Counted once recorded done, just after the platform saw it.
    await until(() => a.outbox.stats().delivered === 3);
    expect(a.outbox.stats()).toEqual({ delivered: 3, retried: 1, failed: 0 });
  });

  it('a sender killed mid-send: the delivery is sent again elsewhere under its own id, before the later ones of its destination', async () => {
    const prefix = redis.prefix();
    const platform = new FakePlatform();
    const never = held();
    // Short locks, checked often: the killed instance's drain job moves on within a second.
    const lease = { lockDurationMs: 600, stalledIntervalMs: 200 };
    const a = open({ prefix, platform, name: 'a', lease });
    let firstAttempts = 0;
    // Its first attempt never answers: the process is about to die.
    platform.gate = (message) => (message.id === 'k1' && ++firstAttempts === 1 ? never.promise : undefined);
    await a.records.add(delivery('k1', 'killed'));
    await a.records.add(delivery('k2', 'killed'));
    await a.records.add(delivery('o1', 'other'));
    await a.outbox.start();
    await within(5_000, 'k1 under way on a', platform.when(() => platform.inFlightTotal >= 1 && platform.sentTo('other').length === 1));
    const b = open({ prefix, platform, name: 'b', lease });
    await b.outbox.start();
    a.kill();
    await within(8_000, "b sends the killed instance's delivery and the next", platform.when(() => platform.sentTo('killed').length === 2));
    expect(platform.sentTo('killed')).toEqual(['k1', 'k2']);
    expect(platform.seen.filter((send) => send.ok && send.message.destination.chatId === 'killed').map((send) => send.instance)).toEqual(['b', 'b']);
    expect(await b.records.states(['k1', 'k2'])).toEqual(new Map([['k1', 'done'], ['k2', 'done']]));
  });

  it('a sender killed after recording a send done, before it left the mailbox: not sent again, and its destination goes on', async () => {
    const prefix = redis.prefix();
    const platform = new FakePlatform();
    const lease = { lockDurationMs: 600, stalledIntervalMs: 200 };
    const a = open({ prefix, platform, name: 'a', lease });
    const finish = a.records.finish.bind(a.records);
    // The process dies right after the send is recorded done, never answering again.
    vi.spyOn(a.records, 'finish').mockImplementation(async (...args) => {
      await finish(...args);
      a.kill();
      return new Promise<void>(() => undefined);
    });
    await a.records.add(delivery('f1', 'F'));
    await a.records.add(delivery('f2', 'F'));
    await a.outbox.start();
    await within(5_000, 'f1 sent by a', platform.when(() => platform.sentTo('F').length === 1));
    const b = open({ prefix, platform, name: 'b', lease });
    await b.outbox.start();
    await within(8_000, 'f2 sent by b', platform.when(() => platform.sentTo('F').length === 2));
    expect(platform.seen.map((send) => `${send.instance}:${send.message.id}`)).toEqual(['a:f1', 'b:f2']);
    await until(async () => (await b.records.pressure(1)).open === 0);
  });
});
