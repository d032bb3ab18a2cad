import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import pino from 'pino';
import { DeliveryError } from '../../src/errors.js';
import { TurnPresence } from '../../src/gateway/turn-presence.js';
import type { Platform, PresenceTarget } from '../../src/platforms/platform.js';
import { getSession, withSession } from '../../src/session/index.js';
import { installTestTelemetry } from '../../src/testing/test-telemetry.js';
import { until } from '../helpers/gateway.js';

// The context manager: without one, no context reaches a timer to leak.
installTestTelemetry();

const logger = pino({ level: 'silent' });
const TARGET: PresenceTarget = { destination: { platform: 'fake', chatId: 'c1', threadId: 't1' }, chatType: 'group', inReplyTo: '9' };

/** A platform that records what it is asked, with the chat of the session active at each call. */
function recordingPlatform(options: { drafts?: boolean; liveMs?: number } = {}) {
  const calls: { what: string; text?: string; id?: string; activeChat: string | undefined }[] = [];
  let nextId = 100;
  const platform: Platform = {
    name: 'fake',
    register: () => undefined,
    send: async () => undefined,
    describe: () => 'fake',
    typing: async () => void calls.push({ what: 'typing', activeChat: getSession()?.chatId }),
    draft: async (_target, id, text) => {
      if (options.drafts !== true) return false;
      calls.push({ what: 'draft', text, id: String(id), activeChat: getSession()?.chatId });
      return true;
    },
    liveIntervalMs: () => options.liveMs ?? 1_000,
    postLive: async (_target, text) => {
      calls.push({ what: 'post', text, activeChat: getSession()?.chatId });
      return String(nextId++);
    },
    editLive: async (_target, id, text) => void calls.push({ what: 'edit', id, text, activeChat: getSession()?.chatId }),
  };
  return { platform, calls };
}

const OTHER = { platform: 'fake', chatType: 'group' as const, chatId: 'someone-else', sessionId: 'tl_other' };

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('TurnPresence', () => {
  it('takes a platform call that throws before it returns a promise as a failed call, in its timers too', async () => {
    vi.useRealTimers();
    const { platform } = recordingPlatform();
    let typings = 0;
    const throwing: Platform = {
      ...platform,
      typing: () => {
        typings++;
        throw new Error('typing broke');
      },
      postLive: () => {
        throw new Error('posting broke');
      },
    };
    const presence = new TurnPresence(throwing, TARGET, new AbortController().signal, { typingIntervalMs: 10, draftIntervalMs: 400 }, logger);
    presence.start();
    presence.progress('An answer long enough to go live');
    // Repeated typing runs in a timer: a throw there would be an uncaught exception.
    await until(() => typings >= 3);
    expect(await presence.replying()).toBeUndefined();
    presence.close();
  });

  it('repeats typing from a clean context, never the context it was started in', async () => {
    vi.useRealTimers();
    const { platform, calls } = recordingPlatform();
    const presence = new TurnPresence(platform, TARGET, new AbortController().signal, { typingIntervalMs: 10, draftIntervalMs: 400 }, logger);
    withSession(OTHER, () => presence.start());
    await until(() => calls.length >= 3);
    presence.close();
    expect(calls[0]!.activeChat).toBe('someone-else');
    expect(calls.slice(1).every((c) => c.activeChat === undefined)).toBe(true);
  });

  it('types at once and every interval, and stops at the first reply', async () => {
    const { platform, calls } = recordingPlatform();
    const presence = new TurnPresence(platform, TARGET, new AbortController().signal, { typingIntervalMs: 4_000, draftIntervalMs: 400 }, logger);
    withSession(OTHER, () => presence.start());
    await vi.advanceTimersByTimeAsync(8_100);
    expect(calls.map((c) => c.what)).toEqual(['typing', 'typing', 'typing']);
    await presence.replying();
    await vi.advanceTimersByTimeAsync(20_000);
    expect(calls).toHaveLength(3);
    presence.close();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('clears every timer when the turn is stopped, and shows nothing more', async () => {
    const { platform, calls } = recordingPlatform();
    const stop = new AbortController();
    const presence = new TurnPresence(platform, TARGET, stop.signal, { typingIntervalMs: 4_000, draftIntervalMs: 400 }, logger);
    presence.start();
    presence.progress('An answer long enough to go live');
    await vi.advanceTimersByTimeAsync(0);
    presence.progress('An answer long enough to go live, and more');
    stop.abort();
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(calls.map((c) => c.what)).toEqual(['typing', 'post']);
  });

  it('throttles live edits to the interval, skips unchanged text, and names the live message to the reply', async () => {
    const { platform, calls } = recordingPlatform({ liveMs: 1_000 });
    const presence = new TurnPresence(platform, TARGET, new AbortController().signal, { typingIntervalMs: 0, draftIntervalMs: 400 }, logger);
    presence.progress('short');
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toEqual([]);
    presence.progress('now long enough to be posted live');
    await vi.advanceTimersByTimeAsync(0);
    presence.progress('now long enough to be posted live, a');
    presence.progress('now long enough to be posted live, ab');
    await vi.advanceTimersByTimeAsync(999);
    expect(calls.map((c) => c.what)).toEqual(['post']);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls.map((c) => [c.what, c.text])).toEqual([
      ['post', 'now long enough to be posted live'],
      ['edit', 'now long enough to be posted live, ab'],
    ]);
    presence.progress('now long enough to be posted live, ab');
    await vi.advanceTimersByTimeAsync(5_000);
    expect(calls).toHaveLength(2);
    expect(await presence.replying()).toBe('100');
    // The next answer starts a live message of its own.
    presence.progress('the second answer, long enough too');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(calls.at(-1)).toMatchObject({ what: 'post', text: 'the second answer, long enough too' });
    expect(await presence.replying()).toBe('101');
    presence.close();
  });

  it('waits out a 429 by skipping updates', async () => {
    const { platform, calls } = recordingPlatform({ drafts: true });
    let refuse = true;
    const draft = platform.draft!;
    platform.draft = async (...args) => {
      if (refuse) {
        refuse = false;
        throw new DeliveryError('Telegram refused sendMessageDraft: 429', { retryable: true, retryAfterMs: 5_000 });
      }
      return draft(...args);
    };
    const presence = new TurnPresence(platform, { ...TARGET, chatType: 'dm' }, new AbortController().signal, { typingIntervalMs: 0, draftIntervalMs: 100 }, logger);
    presence.progress('a');
    await vi.advanceTimersByTimeAsync(0);
    presence.progress('a b');
    presence.progress('a b c');
    await vi.advanceTimersByTimeAsync(4_999);
    expect(calls).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls.map((c) => [c.what, c.text])).toEqual([['draft', 'a b c']]);
    presence.close();
  });
});

describe('TurnPresence refusals', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });

  it('stops drafting after a refusal for good and shows the answer as a live message instead', async () => {
    const { platform, calls } = recordingPlatform({ drafts: true, liveMs: 1_000 });
    platform.draft = async () => {
      calls.push({ what: 'refused draft', activeChat: undefined });
      throw new DeliveryError('Telegram refused sendMessageDraft: 400 Bad Request', { retryable: false });
    };
    const presence = new TurnPresence(platform, { ...TARGET, chatType: 'dm' }, new AbortController().signal, { typingIntervalMs: 0, draftIntervalMs: 100 }, logger);
    presence.progress('an answer long enough for a live message');
    await vi.advanceTimersByTimeAsync(0);
    presence.progress('an answer long enough for a live message, more');
    await vi.advanceTimersByTimeAsync(5_000);
    // At once after the refusal (no draft interval to wait), then edited as it grows.
    expect(calls.map((c) => [c.what, c.text])).toEqual([
      ['refused draft', undefined],
      ['post', 'an answer long enough for a live message'],
      ['edit', 'an answer long enough for a live message, more'],
    ]);
    expect(await presence.replying()).toBe('100');
    presence.close();
  });

  it('stops editing a live message that is gone, and still names it to the reply', async () => {
    const { platform, calls } = recordingPlatform({ liveMs: 100 });
    platform.editLive = async () => {
      calls.push({ what: 'refused edit', activeChat: undefined });
      throw new DeliveryError('Telegram refused editMessageText: 400 message to edit not found', { retryable: false });
    };
    const presence = new TurnPresence(platform, TARGET, new AbortController().signal, { typingIntervalMs: 0, draftIntervalMs: 100 }, logger);
    presence.progress('an answer long enough for a live message');
    await vi.advanceTimersByTimeAsync(0);
    presence.progress('an answer long enough for a live message, more');
    await vi.advanceTimersByTimeAsync(1_000);
    presence.progress('an answer long enough for a live message, more and more');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(calls.map((c) => c.what)).toEqual(['post', 'refused edit']);
    // The reply's delivery tries the edit once more, and sends anew when it fails.
    expect(await presence.replying()).toBe('100');
    presence.close();
  });
});
