import { describe, expect, it } from 'vitest';
import { runClosedLoop } from '../../bench/platforms/closed-loop.js';
import { CHATS, placeOf, type PlatformDriver } from '../../bench/platforms/platform-drivers.js';

/** A driver whose "platform" answers each message on a later turn of the event loop, counting how many wait at once. */
function echoingDriver(options: { readonly failAt?: number } = {}) {
  const sent: string[] = [];
  let listener = () => {};
  let waiting = 0;
  let mostWaiting = 0;
  const driver: PlatformDriver = {
    name: 'echoing',
    env: {},
    ready: async () => {},
    send: async (_url, n, _place, text) => {
      if (n === options.failAt) throw new Error(`refused message ${n}`);
      waiting++;
      mostWaiting = Math.max(mostWaiting, waiting);
      setImmediate(() => {
        waiting--;
        sent.push(text);
        listener();
      });
    },
    replies: () => sent.length,
    calls: () => sent.map(() => 'send'),
    onReply: (next) => (listener = next),
    close: async () => {},
  };
  return { driver, sent, mostWaiting: () => mostWaiting };
}

const gateway = { url: 'http://127.0.0.1:1', pid: process.pid };

describe('the platforms bench tools', () => {
  it('keeps at most the planned messages waiting for a reply, and ends once every reply is in', async () => {
    const platform = echoingDriver();
    const run = await runClosedLoop(platform.driver, gateway, { messages: 100, inFlight: 8, from: 0, timeoutMs: 10_000 });
    expect(platform.sent).toHaveLength(100);
    expect(platform.mostWaiting()).toBe(8);
    expect(Object.fromEntries(run.callsPerMessage)).toEqual({ send: 1 });
    expect(run.messagesPerSecond).toBeGreaterThan(0);
  });

  it('numbers a second run on from where the first ended, counting only its own replies', async () => {
    const platform = echoingDriver();
    await runClosedLoop(platform.driver, gateway, { messages: 10, inFlight: 4, from: 0, timeoutMs: 10_000 });
    await runClosedLoop(platform.driver, gateway, { messages: 10, inFlight: 4, from: 10, timeoutMs: 10_000 });
    expect(platform.sent).toEqual(Array.from({ length: 20 }, (_, n) => `bench message ${n}`));
  });

  it('fails the run with the error of a message the gateway refused', async () => {
    const platform = echoingDriver({ failAt: 5 });
    await expect(runClosedLoop(platform.driver, gateway, { messages: 20, inFlight: 4, from: 0, timeoutMs: 10_000 })).rejects.toThrow('refused message 5');
  });

  it('spreads messages over every chat, a third of them in threads', () => {
    const places = Array.from({ length: 3 * CHATS * 10 }, (_, n) => placeOf(n));
    expect(new Set(places.map((place) => place.chat)).size).toBe(CHATS);
    expect(places.filter((place) => place.thread !== undefined).length / places.length).toBeCloseTo(1 / 3, 2);
    expect(places.every((place) => place.thread === undefined || place.chat % 2 === 0)).toBe(true);
  });
});
