import { afterEach, describe, expect, it } from 'vitest';
import { FakeOpenAI } from '../../src/testing/index.js';
import { arrivalOrder, sharedInstanceEnv, startInstanceProcess } from '../helpers/instances.js';
import { useRedis } from '../helpers/redis.js';

/** Gateway processes on one Redis, turns waiting on a model: every conversation at once, each one turn at a time. */
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const redis = useRedis();

/** The fake model's view: turns in flight per conversation and in all, and any that overlapped its conversation's. */
class ModelLoad {
  readonly overlaps: string[] = [];
  total = 0;
  maxTotal = 0;
  private readonly perChat = new Map<string, number>();
  private waiters: (() => void)[] = [];

  enter(chat: string, text: string): () => void {
    const running = (this.perChat.get(chat) ?? 0) + 1;
    if (running > 1) this.overlaps.push(text);
    this.perChat.set(chat, running);
    this.total++;
    this.maxTotal = Math.max(this.maxTotal, this.total);
    this.wake();
    return () => {
      this.perChat.set(chat, this.perChat.get(chat)! - 1);
      this.total--;
    };
  }

  /** `condition` within `ms`, else a failure naming it. */
  async until(ms: number, what: string, condition: () => boolean): Promise<void> {
    const deadline = Date.now() + ms;
    while (!condition()) {
      if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what} (${this.total} turns in flight)`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 100);
      });
    }
  }

  private wake(): void {
    for (const resolve of this.waiters.splice(0)) resolve();
  }
}

async function post(url: string, chat: string, text: string): Promise<void> {
  const response = await fetch(`${url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ chat_id: chat, text }) });
  await response.body?.cancel();
  expect(response.status).toBe(202);
}

describe('gateway processes on one Redis: the conversation is the unit of order', () => {
  it("three instances × 4 run 12 conversations' slow turns at once, each in order, never two at once, one of them killed mid-turn", async () => {
    const load = new ModelLoad();
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let releaseThird!: () => void;
    const thirdReleased = new Promise<void>((resolve) => (releaseThird = resolve));
    const model = await FakeOpenAI.start(async (request) => {
      const text = FakeOpenAI.lastUserText(request) ?? '';
      const leave = load.enter(text.split(' ')[0]!, text);
      try {
        // Every conversation's first turn waits on the model until all twelve are in flight.
        if (text.endsWith(' m0')) await released;
        // The fourth turns are held too, while one instance is killed in the middle of its share.
        if (text.endsWith(' m3')) await thirdReleased;
        return FakeOpenAI.text(`re: ${text}`);
      } finally {
        leave();
      }
    });
    cleanups.push(() => model.close());
    const { receiver, shared } = await sharedInstanceEnv(redis, cleanups, {
      THREADLINE_LLM_BASE_URL: model.baseUrl,
      THREADLINE_LLM_API_KEY: 'sk-test-0123456789',
      THREADLINE_CONCURRENCY: '4',
      // A killed instance's turns run elsewhere within this.
      THREADLINE_INSTANCE_LEASE_MS: '1500',
    });
    const instances = await Promise.all(['a', 'b', 'c'].map((name) => startInstanceProcess(name, shared, cleanups)));
    const chats = Array.from({ length: 12 }, (_, n) => `c${n}`);

    await Promise.all(chats.map((chat, n) => post(instances[n % 3]!.url, chat, `${chat} m0`)));
    await load.until(20_000, '12 turns in flight at once across the instances', () => load.total === 12);
    // Queued behind their conversation's held turn, through other instances than its first.
    for (const m of [1, 2]) await Promise.all(chats.map((chat, n) => post(instances[(n + m) % 3]!.url, chat, `${chat} m${m}`)));
    release();
    await receiver.waitFor(36, 30_000);

    expect(load.maxTotal).toBe(12);
    expect(load.overlaps).toEqual([]);
    expect(arrivalOrder(receiver)).toEqual(new Map(chats.map((chat) => [chat, [0, 1, 2].map((m) => `re: ${chat} m${m}`)])));

    // kill -9 of an instance with four turns in flight: they run again on the others, before their conversations' next messages.
    await Promise.all(chats.map((chat, n) => post(instances[n % 3]!.url, chat, `${chat} m3`)));
    await load.until(20_000, 'the fourth turns in flight', () => load.total === 12);
    instances[0]!.child.kill('SIGKILL');
    await instances[0]!.exited;
    // Its requests to the model end now, long before its lease lets another instance take their turns over.
    releaseThird();
    await Promise.all(chats.map((chat, n) => post(instances[1 + (n % 2)]!.url, chat, `${chat} m4`)));
    await receiver.waitFor(60, 30_000);

    expect(load.overlaps).toEqual([]);
    expect(arrivalOrder(receiver)).toEqual(new Map(chats.map((chat) => [chat, [0, 1, 2, 3, 4].map((m) => `re: ${chat} m${m}`)])));
  });
});
