import { afterEach, describe, expect, it } from 'vitest';
import { FakeOpenAI, type FakeDiscord, type TestGateway } from '../../../src/testing/index.js';
import { until, useTestGateways } from '../../helpers/gateway.js';

/**
 * Discord through its fake, end to end: messages written in channels and threads reach the
 * gateway over the fake Gateway, and the answers go out through the fake REST API.
 */
const startTestGateway = useTestGateways();
let model: FakeOpenAI | undefined;
afterEach(async () => {
  await model?.close();
  model = undefined;
});

const channel = (i: number) => String(1_500_000_000_000_000_000n + BigInt(i));
const thread = (c: number, t: number) => String(1_600_000_000_000_000_000n + BigInt(c * 100 + t));

/** Writes `text` in `channelId` and returns the message's id. */
function write(fake: FakeDiscord, channelId: string, text: string): string {
  return fake.userMessage({ channelId, content: text });
}

/** The replies sent for each text, by text. */
function repliesByText(fake: FakeDiscord): Map<string, { channelId: string; replyTo: string | undefined }[]> {
  const replies = new Map<string, { channelId: string; replyTo: string | undefined }[]>();
  for (const sent of fake.sent) replies.set(sent.content, [...(replies.get(sent.content) ?? []), { channelId: sent.channelId, replyTo: sent.replyTo }]);
  return replies;
}

describe('Discord, end to end through the fake', () => {
  it('answers concurrent messages in many threads of many channels, each in the channel or thread it was written in, quoting it', async () => {
    const g = await startTestGateway({ discord: true });
    const fake = g.discord!;
    const written: { text: string; channelId: string; id: string }[] = [];
    for (let c = 0; c < 8; c++) for (let t = 0; t < 5; t++) fake.addThread(thread(c, t), channel(c));
    // Interleaved: every round writes once in each channel and each of its threads.
    for (let round = 0; round < 3; round++) {
      for (let c = 0; c < 8; c++) {
        for (const where of [channel(c), ...Array.from({ length: 5 }, (_, t) => thread(c, t))]) {
          const text = `r${round} in ${where}`;
          written.push({ text, channelId: where, id: write(fake, where, text) });
        }
      }
    }
    await until(() => fake.sent.length >= written.length, 20_000);
    await until(() => g.running.gateway.outbox.stats().delivered === written.length);
    const replies = repliesByText(fake);
    for (const message of written) expect(replies.get(message.text)).toEqual([{ channelId: message.channelId, replyTo: message.id }]);
    expect(fake.sent).toHaveLength(written.length);
    // Typing went only where a message was written, and every span of the work carried its own chat and thread.
    const channels = new Set(written.map((message) => message.channelId));
    expect(fake.typing.every((typing) => channels.has(typing.channelId))).toBe(true);
    expect(await g.misroutes()).toEqual([]);
  });

  it('opens a thread from a channel message that asks for one (/thread), and answers in it', async () => {
    const g = await startTestGateway({ discord: true });
    const fake = g.discord!;
    const asked = write(fake, channel(1), '/thread fix the build');
    const plain = write(fake, channel(1), 'in the channel');
    await until(() => fake.sent.length === 2, 10_000);
    expect(fake.threadsStarted).toEqual([{ channelId: channel(1), messageId: asked, name: 'fix the build' }]);
    const replies = repliesByText(fake);
    // The thread has the message's id; the answer is in it, quoting nothing (its start is in the channel).
    expect(replies.get('fix the build')).toEqual([{ channelId: asked, replyTo: undefined }]);
    expect(replies.get('in the channel')).toEqual([{ channelId: channel(1), replyTo: plain }]);
  });

  it('gives a thread message the routing of its channel and thread', async () => {
    const g = await startTestGateway({ discord: true });
    const fake = g.discord!;
    fake.addThread(thread(1, 1), channel(1));
    write(fake, thread(1, 1), 'in the thread');
    await until(() => fake.sent.length === 1);
    const deliveries = await g.deliveries();
    expect(deliveries[0]!.destination).toEqual({ platform: 'discord', chatId: channel(1), threadId: thread(1, 1) });
    expect(fake.sent[0]).toMatchObject({ channelId: thread(1, 1), parentId: channel(1) });
  });

  it('loses nothing and doubles nothing when the websocket is cut mid-stream and the session resumed', async () => {
    const g = await startTestGateway({ discord: true });
    const fake = g.discord!;
    const texts: string[] = [];
    const writeSome = (from: number, count: number) => {
      for (let i = from; i < from + count; i++) {
        texts.push(`m${i}`);
        write(fake, channel(i % 4), `m${i}`);
      }
    };
    writeSome(0, 10);
    await until(() => fake.sent.length >= 5);
    // Cut with the last 5 dispatches the bot had to be replayed again, as from an older sequence.
    fake.gateway.cut({ replayOverlap: 5 });
    await fake.gateway.until(() => fake.gateway.connected === 0);
    // Written while the bot is away: kept for its resume.
    writeSome(10, 10);
    await fake.gateway.until(() => fake.gateway.stats.resumes.length === 1 && fake.gateway.connected === 1);
    writeSome(20, 10);
    await until(() => fake.sent.length >= 30);
    await until(() => g.running.gateway.outbox.stats().delivered === 30);
    expect(fake.gateway.stats.identifies).toHaveLength(1);
    expect(fake.sent.map((sent) => sent.content).sort()).toEqual([...texts].sort());
    expect(new Set(fake.sent.map((sent) => sent.content)).size).toBe(30);
  });

  it('loses nothing and doubles nothing across a restart mid-stream: the new gateway resumes the session the old one kept', async () => {
    const g = await startTestGateway({ discord: true });
    const fake = g.discord!;
    let n = 0;
    const writeNext = () => write(fake, channel(n % 5), `r${n++}`);
    for (let i = 0; i < 10; i++) writeNext();
    await until(() => fake.sent.length >= 3);
    // Messages keep coming while the gateway stops and starts again: before, during and after the gap.
    let restarted = false;
    const restarting = g.restart().then(() => void (restarted = true));
    while (!restarted) {
      writeNext();
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await restarting;
    for (let i = 0; i < 10; i++) writeNext();
    // Settled: every message has its one delivery, sent (a second answer would be a second delivery).
    await until(async () => {
      const deliveries = await g.deliveries();
      return deliveries.length >= n && deliveries.every((delivery) => delivery.status === 'done');
    });
    expect(await g.deliveries()).toHaveLength(n);
    expect(fake.sent.map((sent) => sent.content).sort()).toEqual(Array.from({ length: n }, (_, i) => `r${i}`).sort());
    expect(fake.gatewayStats.identifies).toHaveLength(1);
    expect(fake.gatewayStats.resumes).toHaveLength(1);
  });

  it('streams an answer as a live message in its thread while the websocket is cut, and takes what was written meanwhile once', async () => {
    const pieces = ['The answer, written while ', 'the Gateway is away, ', 'arrives whole.'];
    let g!: TestGateway;
    const shownInThread = () => g.discord!.messagesIn(thread(2, 1)).map((m) => m.content);
    model = await FakeOpenAI.start(async (request) => {
      const asked = String(request.body.messages.at(-1)?.content ?? '');
      if (!asked.includes('stream')) return FakeOpenAI.text(`Seen: ${asked}`);
      return FakeOpenAI.streamed(FakeOpenAI.text(pieces.join('')), {
        pieces,
        before: async (index) => {
          if (index === 1) {
            // The live message is up: cut the socket, and write in another thread while the bot is away.
            await until(() => shownInThread().length === 1);
            g.discord!.gateway.cut();
            await g.discord!.gateway.until(() => g.discord!.gateway.connected === 0);
            write(g.discord!, thread(2, 2), 'meanwhile');
          }
          if (index > 1) await until(() => shownInThread().includes(pieces.slice(0, index).join('')));
        },
      });
    });
    g = await startTestGateway({ discord: true, llmBaseUrl: model.baseUrl, env: { THREADLINE_DISCORD_EDIT_INTERVAL_MS: '1' } });
    const fake = g.discord!;
    fake.addThread(thread(2, 1), channel(2));
    fake.addThread(thread(2, 2), channel(2));
    const asked = write(fake, thread(2, 1), 'please stream');
    await until(() => g.running.gateway.outbox.stats().delivered === 2);
    expect(shownInThread()).toEqual([pieces.join('')]);
    expect(fake.messagesIn(thread(2, 2)).map((m) => m.content)).toEqual(['Seen: meanwhile']);
    // One live message, posted in the thread quoting the question, grown by edits into the answer.
    expect(fake.sent.filter((sent) => sent.channelId === thread(2, 1))).toEqual([expect.objectContaining({ replyTo: asked })]);
    expect(fake.edits.every((edit) => edit.channelId === thread(2, 1))).toBe(true);
    expect(fake.edits.at(-1)!.content).toBe(pieces.join(''));
    expect(fake.gatewayStats.resumes).toHaveLength(1);
  });

  it('holds every call, of every route, for the retry-after of a global 429', async () => {
    const g = await startTestGateway({ discord: true });
    const fake = g.discord!;
    fake.failNext(1, { status: 429, retryAfter: 1, global: true });
    write(fake, channel(1), 'first');
    await until(() => fake.rateLimited === 1);
    const limitedAt = fake.calls.find((call) => call.status === 429)!.at;
    write(fake, channel(2), 'second, elsewhere');
    await until(() => fake.sent.length === 2);
    const after = fake.calls.filter((call) => call.at > limitedAt);
    expect(after.length).toBeGreaterThan(0);
    expect(Math.min(...after.map((call) => call.at)) - limitedAt).toBeGreaterThanOrEqual(950);
    expect(g.running.gateway.outbox.stats()).toMatchObject({ retried: 0, failed: 0 });
  });

  it('paces a busy channel by its bucket headers, without a single 429', async () => {
    const g = await startTestGateway({ discord: true });
    const fake = g.discord!;
    fake.rateLimitChannels(2, 300);
    for (let i = 0; i < 6; i++) write(fake, channel(3), `busy ${i}`);
    await until(() => fake.sent.length === 6);
    expect(fake.rateLimited).toBe(0);
    const posts = fake.calls.filter((call) => call.route === 'POST /channels/:id/messages').map((call) => call.at);
    // Six posts, two a window: the last came at least two windows after the first.
    expect(posts.at(-1)! - posts[0]!).toBeGreaterThanOrEqual(550);
  });

  it('leaves a 429 longer than the client sits out to the outbox, which retries after its retry-after', async () => {
    const g = await startTestGateway({ discord: true });
    const fake = g.discord!;
    fake.failNext(1, { status: 429, retryAfter: 3 });
    write(fake, channel(4), 'later');
    await until(() => g.running.gateway.outbox.stats().delivered === 1, 15_000);
    const [limited, delivered] = fake.calls.filter((call) => call.route === 'POST /channels/:id/messages');
    expect(limited!.status).toBe(429);
    expect(delivered!.at - limited!.at).toBeGreaterThanOrEqual(2_900);
    expect(g.running.gateway.outbox.stats()).toMatchObject({ retried: 1, delivered: 1, failed: 0 });
  });
});
