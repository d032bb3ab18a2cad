import { describe, expect, it } from 'vitest';
import type { FakeMattermost, MattermostSent } from '../../../src/testing/index.js';
import { until, useTestGateways } from '../../helpers/gateway.js';

const start = useTestGateways();

/** Where a user's post was written, and the text that names it. */
interface Written {
  readonly channelId: string;
  readonly rootId: string | undefined;
  readonly text: string;
}

/** The bot's answers, by the text they echo (the default agent echoes). */
function answersByText(fake: FakeMattermost): Map<string, MattermostSent[]> {
  const byText = new Map<string, MattermostSent[]>();
  for (const sent of fake.sent) byText.set(sent.message, [...(byText.get(sent.message) ?? []), sent]);
  return byText;
}

/** Every written post answered exactly once, in its own channel and thread; nothing else posted. */
function expectEachAnsweredOnceInPlace(fake: FakeMattermost, written: readonly Written[]): void {
  const byText = answersByText(fake);
  for (const post of written) {
    expect(byText.get(post.text), post.text).toHaveLength(1);
    expect(byText.get(post.text)![0], post.text).toMatchObject({ channelId: post.channelId, rootId: post.rootId });
  }
  expect(fake.sent).toHaveLength(written.length);
  // The fake refuses a root of another channel with 400: none was tried.
  expect(fake.calls.filter((call) => call.route === '/posts' && call.status !== 201)).toEqual([]);
}

/** Channels of every kind, each with threads, written in from `from` on: `count` posts, a third at the channel's top level. */
function writeMany(fake: FakeMattermost, places: { channelId: string; roots: string[] }[], count: number, from = 0): Written[] {
  const written: Written[] = [];
  for (let i = from; i < from + count; i++) {
    const place = places[i % places.length]!;
    const rootId = i % 3 === 0 ? undefined : place.roots[i % place.roots.length];
    const text = `post ${i}`;
    fake.userPost({ channelId: place.channelId, rootId, message: text });
    written.push({ channelId: place.channelId, rootId, text });
  }
  return written;
}

function placesIn(fake: FakeMattermost, channels: number, threads: number): { channelId: string; roots: string[] }[] {
  const types = ['O', 'P', 'G', 'D'] as const;
  return Array.from({ length: channels }, (_, i) => {
    const channelId = fake.addChannel({ type: types[i % types.length]! });
    return { channelId, roots: Array.from({ length: threads }, () => fake.addThread(channelId)) };
  });
}

describe('mattermost through its fake server', () => {
  it('answers 300 concurrent posts in 120 threads of 30 channels, each in its own channel and thread only', async () => {
    const g = await start({ mattermost: true });
    const fake = g.mattermost!;
    const written = writeMany(fake, placesIn(fake, 30, 4), 300);
    await until(() => fake.sent.length >= 300, 30_000);
    expectEachAnsweredOnceInPlace(fake, written);
    await until(() => g.running.gateway.outbox.stats().delivered === 300);
    expect(await g.misroutes()).toEqual([]);
  });

  it('catches up on the posts written while the websocket was cut: none lost, none answered twice', async () => {
    const g = await start({ mattermost: true });
    const fake = g.mattermost!;
    const places = placesIn(fake, 6, 2);
    const before = writeMany(fake, places, 12);
    await until(() => fake.sent.length === 12);
    fake.cut({ down: true });
    const during = writeMany(fake, places, 24, 12);
    fake.resume();
    await fake.waitForConnections(2);
    // Written as the new connection catches up: some come live, some by the catch-up, some both.
    const after = writeMany(fake, places, 12, 36);
    await until(() => fake.sent.length >= 48, 15_000);
    expectEachAnsweredOnceInPlace(fake, [...before, ...during, ...after]);
    // The catch-up asked for posts since before the cut, only in channels that had some.
    expect(fake.calls.some((call) => call.method === 'GET' && call.route === '/channels/:id/posts')).toBe(true);
  });

  it('reconnects and catches up when events go missing on an open websocket (a gap in seq)', async () => {
    const g = await start({ mattermost: true });
    const fake = g.mattermost!;
    const places = placesIn(fake, 3, 2);
    fake.loseEvents(2);
    const lost = writeMany(fake, places, 2);
    // The next event shows the gap: the bot reconnects and catches up on the two it never saw.
    const next = writeMany(fake, places, 3, 2);
    await fake.waitForConnections(2);
    await until(() => fake.sent.length >= 5);
    expectEachAnsweredOnceInPlace(fake, [...lost, ...next]);
  });

  it('after a restart answers what was written while it was down, and nothing it had answered', async () => {
    const g = await start({ mattermost: true });
    const fake = g.mattermost!;
    const places = placesIn(fake, 4, 2);
    const before = writeMany(fake, places, 8);
    await until(() => fake.sent.length === 8);
    let whileDown: Written[] = [];
    await g.restart(() => {
      whileDown = writeMany(fake, places, 8, 8);
    });
    await until(() => fake.sent.length >= 16);
    expectEachAnsweredOnceInPlace(fake, [...before, ...whileDown]);
  });

  it('catches up from the cursor it stored, however long it was down: no window of its own (CATCH_UP_MS=0)', async () => {
    const g = await start({ mattermost: true, env: { THREADLINE_MATTERMOST_CATCH_UP_MS: '0' } });
    const fake = g.mattermost!;
    const places = placesIn(fake, 2, 1);
    const before = writeMany(fake, places, 4);
    await until(() => fake.sent.length === 4);
    let whileDown: Written[] = [];
    await g.restart(() => {
      whileDown = writeMany(fake, places, 4, 4);
    });
    await until(() => fake.sent.length >= 8);
    expectEachAnsweredOnceInPlace(fake, [...before, ...whileDown]);
  });

  it('honours a 429 with the Retry-After of the rate limiter, then posts once', async () => {
    const g = await start({ mattermost: true });
    const fake = g.mattermost!;
    const channelId = fake.addChannel();
    fake.failNext(1, 429, { retryAfter: 2 });
    const started = Date.now();
    fake.userPost({ channelId, message: 'later' });
    await until(() => fake.sent.length === 1, 10_000);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_900);
    expect(fake.calls.filter((call) => call.route === '/posts').map((call) => call.status)).toEqual([429, 201]);
    await until(() => g.running.gateway.outbox.stats().delivered === 1);
    expect(g.running.gateway.outbox.stats()).toMatchObject({ retried: 1, failed: 0 });
  });

  it('answers a top-level post in the channel, or in a thread rooted at it with THREADLINE_MATTERMOST_THREAD_TOP_LEVEL=1', async () => {
    const inChannel = await start({ mattermost: true });
    const channelId = inChannel.mattermost!.addChannel();
    inChannel.mattermost!.userPost({ channelId, message: 'top' });
    await until(() => inChannel.mattermost!.sent.length === 1);
    expect(inChannel.mattermost!.sent[0]).toMatchObject({ channelId, rootId: undefined });

    const threaded = await start({ mattermost: true, env: { THREADLINE_MATTERMOST_THREAD_TOP_LEVEL: '1' } });
    const other = threaded.mattermost!.addChannel();
    const post = threaded.mattermost!.userPost({ channelId: other, message: 'top' });
    await until(() => threaded.mattermost!.sent.length === 1);
    expect(threaded.mattermost!.sent[0]).toMatchObject({ channelId: other, rootId: post.id });
  });

  // Mattermost takes a post that begins with / for a slash command of its own; a space first sends it as text.
  it("takes a command typed with a space before it, and leaves other bots' and integrations' posts alone", async () => {
    const g = await start({ mattermost: true });
    const fake = g.mattermost!;
    const channelId = fake.addChannel({ type: 'D' });
    fake.userPost({ channelId, message: 'from another bot', props: { from_bot: 'true' } });
    fake.userPost({ channelId, message: 'from a webhook', props: { from_webhook: 'true' } });
    fake.userPost({ channelId, message: ' /status' });
    await until(() => fake.sent.length === 1);
    expect(fake.sent[0]!.message).toContain('platform: mattermost');
    expect(fake.sent.map((sent) => sent.message).join('\n')).not.toContain('another bot');
  });
});
