import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replyLatencies } from '../../bench/distributed/reply-latency.js';
import { startReplySink, type ReplySink } from '../../bench/distributed/reply-sink-process.js';
import { instanceOf } from '../../bench/distributed/split-load.js';

describe('the distributed bench tools', () => {
  it('spreads messages evenly over the instances, and each chat over all of them', () => {
    const chats = 200;
    const instancesOfChat = new Map<number, Set<number>>();
    const perInstance = [0, 0];
    for (let n = 0; n < 2_000; n++) {
      const instance = instanceOf(n, 2, chats);
      perInstance[instance]!++;
      instancesOfChat.set(n % chats, (instancesOfChat.get(n % chats) ?? new Set()).add(instance));
    }
    expect(perInstance).toEqual([1_000, 1_000]);
    for (const instances of instancesOfChat.values()) expect([...instances].sort()).toEqual([0, 1]);
    expect(instanceOf(7, 1, chats)).toBe(0);
  });

  it("times each accepted message from its 202 to its reply, skips refused ones and counts replies that never came", () => {
    // Window messages 10, 11, 12, 13: 11 was refused, 13 got no reply.
    const acceptedAtUs = Float64Array.from([1_000, Number.NaN, 2_000, 3_000]);
    const arrivals = new Map([['m10', 6_000], ['m11', 9_000], ['m12', 2_500]]);
    const { sortedMs, missing } = replyLatencies(acceptedAtUs, 10, arrivals, (n) => `m${n}`);
    expect(Array.from(sortedMs)).toEqual([0.5, 5]);
    expect(missing).toBe(1);
  });

  describe('the reply sink', () => {
    let sink: ReplySink;
    beforeAll(async () => {
      sink = await startReplySink();
    });
    afterAll(() => sink.stop());

    const deliver = async (body: string) => {
      const response = await fetch(`${sink.url}/deliveries`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      await response.body?.cancel();
      return response.status;
    };

    it('keeps the first arrival of each reply on the shared monotonic clock, until a reset', async () => {
      await sink.reset();
      const startedUs = Number(process.hrtime.bigint() / 1000n);
      expect(await deliver(JSON.stringify({ chat_id: 'c', text: 'm1' }))).toBe(200);
      const firstArrivals = await sink.arrivals();
      expect(await deliver(JSON.stringify({ chat_id: 'c', text: 'm1' }))).toBe(200);
      expect(await deliver(JSON.stringify({ chat_id: 'c', text: 'm2' }))).toBe(200);
      await sink.awaitDeliveries(2, 5_000);
      const arrivals = await sink.arrivals();
      expect([...arrivals.keys()].sort()).toEqual(['m1', 'm2']);
      expect(arrivals.get('m1')).toBe(firstArrivals.get('m1'));
      expect(arrivals.get('m1')).toBeGreaterThanOrEqual(startedUs);
      expect(arrivals.get('m1')).toBeLessThanOrEqual(Number(process.hrtime.bigint() / 1000n));
      await sink.reset();
      expect((await sink.arrivals()).size).toBe(0);
    });

    it('fails the wait, with the reason, when a delivery has no text to time it by', async () => {
      await sink.reset();
      expect(await deliver('not json')).toBe(200);
      expect(await deliver(JSON.stringify({ chat_id: 'c' }))).toBe(200);
      await expect(sink.awaitDeliveries(1, 5_000)).rejects.toThrow(/2 deliveries had no text/);
    });

    it('fails the wait when replies are missing, rather than waiting for ever', async () => {
      await sink.reset();
      await expect(sink.awaitDeliveries(1, 50)).rejects.toThrow(/only 0 of 1 replies arrived/);
    });
  });
});
